"""No JVM call from the garbage collector: Spark releases wait for a statement boundary."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from txsql import Session
from txsql.engine.releases import drain_releases, pending_releases, release_later
from txsql.planner.operations.merge.check import SourceRows

MERGE = (
    "MERGE INTO t USING src ON t.id = src.id "
    "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT *"
)


def test_release_waits_for_the_drain_and_a_failing_one_is_skipped() -> None:
    ran: list[str] = []

    def fail() -> None:
        raise RuntimeError("session stopped")

    release_later(lambda: ran.append("a"))
    release_later(fail)
    release_later(lambda: ran.append("b"))
    assert ran == []
    assert pending_releases() == 3
    assert drain_releases() == 3
    assert ran == ["a", "b"]
    assert pending_releases() == 0


class JvmCallsDuringGc:
    """Records Py4J commands sent by a thread while that thread's GC runs.

    Every ``every``-th command first runs a full collection, so the garbage a statement left
    (MERGE's source handle sits in a reference cycle) is finalized inside a Py4J call.
    """

    def __init__(self, every: int) -> None:
        self.every = every
        self.sent = 0
        self.during_gc: list[str] = []
        self._collecting: set[int] = set()

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        del info
        if phase == "start":
            self._collecting.add(threading.get_ident())
        else:
            self._collecting.discard(threading.get_ident())

    def wrap(self, send: Any) -> Any:
        def send_command(connection: Any, command: str, *args: Any, **kwargs: Any) -> Any:
            me = threading.get_ident()
            if me in self._collecting:
                self.during_gc.append(repr(command[:60]))
            else:
                self.sent += 1
                if self.sent % self.every == 0:
                    gc.collect()
            return send(connection, command, *args, **kwargs)

        return send_command


@pytest.fixture()
def jvm_calls_during_gc(monkeypatch: pytest.MonkeyPatch) -> Iterator[JvmCallsDuringGc]:
    from py4j.clientserver import ClientServerConnection

    probe = JvmCallsDuringGc(every=25)
    monkeypatch.setattr(
        ClientServerConnection, "send_command", probe.wrap(ClientServerConnection.send_command)
    )
    gc.callbacks.append(probe.on_gc)
    try:
        yield probe
    finally:
        gc.callbacks.remove(probe.on_gc)


@pytest.mark.spark
def test_merges_with_gc_inside_py4j_calls_make_no_jvm_call_from_gc(
    spark: Any,
    tmp_path: Path,
    jvm_calls_during_gc: JvmCallsDuringGc,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept: list[Any] = []  # the cached source columns, not the handles (those must be freed)
    capture = SourceRows.capture.__func__  # type: ignore[attr-defined]

    def capture_and_remember(cls: type[SourceRows], *args: Any) -> SourceRows:
        rows = capture(cls, *args)
        kept.append(rows.kept)
        return rows

    monkeypatch.setattr(SourceRows, "capture", classmethod(capture_and_remember))
    s = Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id BIGINT, v BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 1), (2, 2)")
    spark.range(4).selectExpr("id", "id * 10 AS v").createOrReplaceTempView("src")
    for _ in range(4):
        s.sql(MERGE)
    gc.collect()  # whatever the MERGEs left in cycles is finalized now, outside a statement

    assert jvm_calls_during_gc.sent > 100  # the probe saw the session's Py4J traffic
    assert jvm_calls_during_gc.during_gc == []
    # The sources the MERGEs kept for their conflict checks are released at the next
    # statement boundary, on the session's thread.
    assert len(kept) == 4
    rows = s.sql("SELECT id, v FROM t ORDER BY id").to_pandas()
    assert pending_releases() == 0
    assert not any(df.is_cached for df in kept)
    assert list(zip(rows.id, rows.v)) == [(0, 0), (1, 10), (2, 20), (3, 30)]
