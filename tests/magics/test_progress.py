"""The progress line: Spark stage progress, phases, removal, and cancelling on Ctrl-C."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from txsql.magics.progress import Progress, cancel_spark_jobs


class FakeDisplay:
    def __init__(self) -> None:
        self.shown: list[str] = []
        self.cleared = False

    def show(self, text: str, html: str) -> None:
        self.shown.append(text)

    def clear(self) -> None:
        self.cleared = True


class FakeSpark:
    """Classic-like: a statusTracker with one active stage; records cancellation."""

    def __init__(self, with_interrupt: bool = True) -> None:
        self.calls: list[str] = []
        stage = SimpleNamespace(numTasks=8, numCompletedTasks=5)
        tracker = SimpleNamespace(getActiveStageIds=lambda: [3], getStageInfo=lambda i: stage)
        self.sparkContext = SimpleNamespace(
            statusTracker=lambda: tracker, cancelAllJobs=lambda: self.calls.append("cancel")
        )
        if with_interrupt:
            self.interruptAll = lambda: self.calls.append("interrupt")


def test_progress_line_shows_tasks_and_phase_then_disappears() -> None:
    display = FakeDisplay()
    with Progress(FakeSpark(), "UPDATE t SET", display=display, delay=0, interval=0.01) as p:
        p.phase("fetch rows")
        time.sleep(0.1)
    assert display.shown and display.cleared
    assert display.shown[-1].startswith("⏳ UPDATE t SET · fetch rows · 5/8 tasks · ")


def test_quick_statements_show_nothing() -> None:
    display = FakeDisplay()
    with Progress(FakeSpark(), "SELECT", display=display, delay=5):
        pass
    assert display.shown == [] and not display.cleared


@pytest.mark.parametrize(("with_interrupt", "expected"), [(True, "interrupt"), (False, "cancel")])
def test_ctrl_c_cancels_spark_jobs_and_reraises(with_interrupt: bool, expected: str) -> None:
    spark: Any = FakeSpark(with_interrupt)
    with pytest.raises(KeyboardInterrupt), Progress(spark, "DELETE", display=None):
        raise KeyboardInterrupt
    assert spark.calls == [expected]


def test_cancel_falls_back_when_interrupt_fails() -> None:
    spark: Any = FakeSpark()

    def broken() -> None:
        raise RuntimeError("not supported")

    spark.interruptAll = broken
    cancel_spark_jobs(spark)
    assert spark.calls == ["cancel"]


@pytest.mark.spark
def test_progress_polls_a_real_classic_session(spark: Any) -> None:
    display = FakeDisplay()
    with Progress(spark, "SELECT", display=display, delay=0, interval=0.01) as p:
        p.phase("fetch rows")
        spark.range(200_000).selectExpr("sum(id)").collect()
        time.sleep(0.05)
    assert display.shown and display.cleared
    assert display.shown[-1].startswith("⏳ SELECT · fetch rows · ")
