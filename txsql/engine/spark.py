"""Creating or adopting the SparkSession txsql runs on, and starting it in the background.

``%load_ext txsql`` starts and warms a local session in a thread (:class:`BackgroundStart`)
when the notebook has none, so the JVM launch (several seconds) overlaps with the user
typing the first cell instead of being paid by it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from txsql.errors import SparkStartError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Settings txsql needs on any session: micro-second timestamps in Parquet (INT96 has no
# statistics and is deprecated in Delta) and the Parquet row index for deletion vectors.
REQUIRED_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(master: str = "local[*]", app_name: str = "txsql") -> SparkSession:
    """Start (or reuse) a quiet local SparkSession suitable for notebooks and tests."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", os.environ.get("TXSQL_DRIVER_MEMORY", "2g"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in REQUIRED_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")  # local sessions only; never on Spark Connect
    return spark


def prepare_session(spark: SparkSession) -> SparkSession:
    """Apply txsql's required settings to a session the user gave us (works on Connect)."""
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    return spark


def _python() -> str:
    import sys

    return sys.executable


# --- starting Spark in the background at ``%load_ext txsql`` ----------------------------

# Set to "0" to start Spark only when the first statement needs it (the old behaviour).
BACKGROUND_START_ENV = "TXSQL_BACKGROUND_START"
# Either of these means the user wants Spark Connect: never start a local JVM for them.
_REMOTE_ENV = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")


def wants_background_start(environ: Mapping[str, str] | None = None) -> bool:
    """True when nothing else decides the session: no running Spark, no remote, not disabled.

    Checked on the loading thread without importing pyspark: if pyspark is not imported yet,
    no SparkSession can exist in this process.
    """
    env = os.environ if environ is None else environ
    if env.get(BACKGROUND_START_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if any(env.get(name) for name in _REMOTE_ENV):
        return False
    if "pyspark" not in sys.modules:
        return True
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # getActiveSession is per thread; a live SparkContext covers sessions other threads made.
    return SparkContext._active_spark_context is None and SparkSession.getActiveSession() is None


def warm_session(spark: SparkSession, keep_going: Callable[[], bool] = lambda: True) -> None:
    """Load what the first statements need, so the user's first cell does not pay for it.

    Steps, most needed first: a 1-row Parquet write (the JVM loads the Parquet writer and
    codegen classes; every INSERT needs them), a read of it (every SELECT), and the same
    read through ``mapInArrow`` (Spark starts its Python worker daemon, which imports
    txsql; DML and deletion-vector scans need it). ``keep_going()`` is asked before each
    step: once a cell waits, warming stops, because the cell's own statement loads what it
    needs anyway and a step it does not need would only delay it (measured: read +
    mapInArrow cost about as much as the write itself on a cold JVM).
    """
    with tempfile.TemporaryDirectory(prefix="txsql-warm-") as tmp:
        path = os.path.join(tmp, "warm")
        if not keep_going():
            return
        spark.range(1).selectExpr("id", "CAST(id AS STRING) AS s").write.parquet(path)
        if not keep_going():
            return
        _expect_one_row(spark.read.parquet(path).collect())
        if not keep_going():
            return
        schema = "id long, s string"
        _expect_one_row(spark.read.parquet(path).mapInArrow(_same_batches, schema).collect())


def _expect_one_row(rows: list[Any]) -> None:
    if len(rows) != 1:
        raise RuntimeError(f"the warm-up query returned {len(rows)} rows instead of 1")


def _same_batches(batches: Iterable[Any]) -> Iterable[Any]:
    yield from batches


class BackgroundStart:
    """A SparkSession being started and warmed in a daemon thread.

    The first statement calls :meth:`wait`; a failure in the thread is raised there as a
    :class:`~txsql.errors.SparkStartError` (the user sees it on the cell that needs Spark).
    """

    def __init__(
        self,
        start: Callable[[], SparkSession] | None = None,
        warm: Callable[[SparkSession, Callable[[], bool]], None] | None = warm_session,
    ) -> None:
        self._start = start if start is not None else local_session
        self._warm = warm
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._stage = "starting"
        self._waited_for = threading.Event()  # set once a cell waits: warming stops
        self.started_at = time.monotonic()
        self.stage_seconds: dict[str, float] = {}  # how long starting and warming took
        self._thread = threading.Thread(target=self._run, name="txsql-spark-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            session = self._start()
            self.stage_seconds["start"] = self.elapsed()
            self._stage = "warming"
            if self._warm is not None:
                self._warm(session, lambda: not self._waited_for.is_set())
            self.stage_seconds["warm"] = self.elapsed() - self.stage_seconds["start"]
            self._session = session
        except BaseException as error:  # re-raised, typed, by wait()
            self._error = error

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def wait(
        self, on_tick: Callable[[float], None] | None = None, interval: float = 0.25
    ) -> SparkSession:
        """The started session; ``on_tick(seconds since start)`` runs while waiting.

        Waiting stops the warm-up after its current step (see :func:`warm_session`).
        """
        self._waited_for.set()
        while self._thread.is_alive():
            if on_tick is not None:
                on_tick(self.elapsed())
            self._thread.join(interval)
        if self._error is not None:
            error = self._error
            first_line = (str(error).strip().splitlines() or [""])[0][:300]
            raise SparkStartError(
                f"{self._stage} Spark in the background failed: "
                f"{type(error).__name__}: {first_line}"
            ) from error
        assert self._session is not None
        return self._session
