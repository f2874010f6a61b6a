"""``%load_ext txsql`` starts Spark in the background; the first cell waits for that session."""

from __future__ import annotations

import sys
import threading
from typing import Any, ClassVar

import pytest

import txsql
from tests.magics import cell, ip, magics_of
from txsql.engine.spark import BackgroundStart, wants_background_start, warm_session
from txsql.errors import SparkStartError, TxSqlError
from txsql.magics.magic import TxSqlMagics

pytestmark = pytest.mark.spark
__all__ = ["ip"]


class _Lines:
    """Records what the progress display was asked to show."""

    shown: ClassVar[list[str]] = []

    def show(self, text: str, html: str) -> None:
        assert text in html
        _Lines.shown.append(text)

    def clear(self) -> None:
        _Lines.shown.append("<cleared>")


@pytest.fixture()
def progress_lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    _Lines.shown = []
    monkeypatch.setattr("txsql.magics.magic.IPythonDisplay", _Lines)
    monkeypatch.setattr(TxSqlMagics, "_progress_enabled", lambda self, quiet: not quiet)
    return _Lines.shown


def test_load_ext_starts_spark_in_background_and_first_cell_uses_it(
    ip: Any, spark: Any, monkeypatch: pytest.MonkeyPatch, progress_lines: list[str]
) -> None:
    # The test session's Spark is already running, so load_ext would adopt it; pretend the
    # notebook is fresh. local_session() in the thread then returns the running session
    # (getOrCreate), and the real warm-up (Parquet write/read + mapInArrow) runs on it.
    monkeypatch.setattr("txsql.magics.magic.wants_background_start", lambda: True)
    before = magics_of(ip)
    warmed = threading.Event()

    def warm(session: Any, keep_going: Any) -> None:
        warmed.wait(5)  # hold the thread until the cell below is already waiting
        assert not keep_going(), "a waiting cell stops the warm-up"
        warm_session(session, keep_going)

    monkeypatch.setattr("txsql.magics.magic._warm_for_notebook", warm)
    txsql.load_ipython_extension(ip)
    loaded = magics_of(ip)
    try:
        assert loaded is not before and loaded.background is not None
        assert not loaded.background.done, "load_ext returns before Spark is ready"
        loaded.warehouse = before.warehouse
        status = repr(ip.run_line_magic("txsql", ""))
        assert "Spark: starting in the background" in status
        threading.Timer(0.6, warmed.set).start()
        result = cell(loaded.shell, "CREATE TABLE w (id INT);\nINSERT INTO w VALUES (1), (2)")
        assert [r.operation for r in result.results] == ["CREATE TABLE", "WRITE"]
        assert loaded.background.done
        assert progress_lines and progress_lines[0].startswith("starting Spark… ")
        assert progress_lines[-1] == "<cleared>"
        (session,) = loaded._sessions.values()
        assert session.spark is spark, "the cell ran on the session the thread started"
        rows = cell(loaded.shell, "SELECT sum(id) AS s FROM w", line="-l all")
        assert rows.fetched.rows[0][0] == 3
    finally:
        ip.configurables.remove(loaded)
        ip.register_magics(before)


def test_background_start_failure_is_a_typed_error_on_the_first_cell(
    ip: Any, spark: Any, progress_lines: list[str]
) -> None:
    def broken_start() -> Any:
        raise RuntimeError("Java gateway process exited before sending its port number")

    magics = magics_of(ip)
    magics.background = BackgroundStart(start=broken_start, warm=None)
    with pytest.raises(SparkStartError) as raised:
        cell(ip, "CREATE TABLE f (id INT)")
    assert isinstance(raised.value, TxSqlError)
    assert "starting Spark in the background failed: RuntimeError: Java gateway" in str(
        raised.value
    )
    assert "JAVA_HOME" in raised.value.hint
    assert magics.background is None, "the failure is reported once"
    # The next cell starts Spark the usual way (here: adopts the running session).
    assert cell(ip, "CREATE TABLE f (id INT)").results[0].operation == "CREATE TABLE"


def test_warm_up_runs_every_step_until_a_cell_waits(spark: Any) -> None:
    steps: list[bool] = []

    def keep_going() -> bool:
        steps.append(True)
        return True

    warm_session(spark, keep_going)  # write, read, mapInArrow: each checks its 1 row
    assert len(steps) == 3
    warm_session(spark, lambda: False)  # nothing to do once a cell waits


def test_warm_up_failure_names_the_warm_step(spark: Any) -> None:
    def broken_warm(session: Any, keep_going: Any) -> None:
        raise ValueError("Python worker failed to connect back")

    started = BackgroundStart(start=lambda: spark, warm=broken_warm)
    with pytest.raises(SparkStartError, match="warming Spark in the background failed"):
        started.wait()


def test_no_background_start_when_the_notebook_decides(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not wants_background_start({}), "a SparkSession already runs in this process"
    monkeypatch.delitem(sys.modules, "pyspark")  # as before anything imported pyspark
    assert wants_background_start({})
    assert not wants_background_start({"SPARK_REMOTE": "sc://localhost"})
    assert not wants_background_start({"TXSQL_BACKGROUND_START": "0"})
