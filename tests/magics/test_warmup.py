"""The background warm-up of txsql's statement paths: complete, cancellable, leaves nothing."""

from __future__ import annotations

import glob
import os
import tempfile
import threading
from typing import Any

import pytest

from txsql.engine.spark import BackgroundStart
from txsql.magics.warmup import (
    SCRATCH_STATEMENTS,
    WARMUP_TAG,
    cancel_warmup,
    wants_warmup,
    warm_statements,
)

pytestmark = pytest.mark.spark


def _scratch_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "txsql-warmup-*")))


def test_warm_up_runs_every_statement_and_leaves_nothing_behind(spark: Any) -> None:
    views = {t.name for t in spark.catalog.listTables()}
    scratch = _scratch_dirs()
    tags_seen: list[set[str]] = []

    def keep_going() -> bool:
        tags_seen.append(set(spark.sparkContext.getJobTags()))  # on the warm-up's thread
        return True

    assert warm_statements(spark, keep_going) == len(SCRATCH_STATEMENTS)
    assert all(WARMUP_TAG in tags for tags in tags_seen), "its jobs can be cancelled"
    assert WARMUP_TAG not in spark.sparkContext.getJobTags(), "the tag is removed after"
    assert _scratch_dirs() == scratch, "the scratch warehouse is removed"
    assert {t.name for t in spark.catalog.listTables()} == views


def test_warm_up_stops_once_a_cell_waits(spark: Any) -> None:
    answers = iter([True, True, False])
    assert warm_statements(spark, lambda: next(answers)) == 2


def test_a_cancelled_statement_ends_the_warm_up_quietly(spark: Any) -> None:
    def keep_going() -> bool:
        # The cell's cancel arrives while a statement runs: emulate it with a timer that
        # cancels the tagged jobs of the next statement (CREATE, INSERT... each run jobs).
        threading.Timer(0.05, cancel_warmup, args=(spark,)).start()
        return True

    done = warm_statements(spark, keep_going)  # never raises
    assert 0 <= done <= len(SCRATCH_STATEMENTS)
    assert WARMUP_TAG not in spark.sparkContext.getJobTags()


def test_a_waiting_cell_does_not_wait_for_the_warm_up_and_cancels_it(spark: Any) -> None:
    in_warm_up = threading.Event()
    release = threading.Event()
    cancelled: list[Any] = []

    def warm_after(session: Any, keep_going: Any) -> None:
        in_warm_up.set()
        release.wait(30)  # a warm-up statement that would take long

    started = BackgroundStart(
        start=lambda: spark, warm=None, warm_after=warm_after, cancel_warm=cancelled.append
    )
    assert in_warm_up.wait(10)
    assert started.done
    try:
        assert started.wait() is spark  # returns while the warm-up still runs
        assert cancelled == [spark]
        assert not release.is_set()
    finally:
        release.set()


def test_txsql_warmup_0_turns_it_off() -> None:
    assert wants_warmup({})
    assert not wants_warmup({"TXSQL_WARMUP": "0"})
    assert not wants_warmup({"TXSQL_WARMUP": "off"})
