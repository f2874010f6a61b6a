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
    # Spark 4.1 shreds VARIANT columns by default; Delta allows shredded files only under
    # variantShredding with delta.enableVariantShredding, and unshredded ones always.
    "spark.sql.variant.writeShredding.enabled": "false",
}


RETENTION_CONF = {
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "5000",
    "spark.sql.ui.retainedExecutions": "50",
    "spark.ui.dagGraph.retainedRootRDDs": "50",
    # Every scan of new files adds their listing to Spark's file status cache (250 MB by
    # default); txsql lists files from the log, so a small cache loses nothing.
    "spark.sql.hive.filesourcePartitionFileCacheSize": str(32 * 2**20),
}


# Environment variable naming the file the local JVM's own output goes to (see below).
SPARK_LOG_ENV = "TXSQL_SPARK_LOG"

# log4j2 settings for a local session: warnings and errors go to the JVM's stderr, which
# :func:`local_session` sends to a log file. Giving log4j a file at all stops Spark's
# "Using Spark's default log4j profile" line; setting the REPL logger to the root's level
# stops its "Setting default log level to WARN" pair of lines (printed when they differ).
_LOG4J2_PROPERTIES = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = warn
logger.nativeio.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativeio.level = error
"""


def local_session(master: str = "local[*]", app_name: str = "txsql") -> SparkSession:
    """Start (or reuse) a quiet local SparkSession suitable for notebooks and tests.

    Quiet means nothing on this process's stderr: the JVM's start-up lines (the
    ``jdk.incubator.vector`` module warning, which the JVM itself prints and no option
    silences; Spark's log4j banner; the loopback-hostname and native-hadoop warnings) and
    everything it logs later go to :func:`spark_log_path` instead. Errors still reach the
    caller as exceptions from the statement that failed.
    """
    # Deferred: %load_ext imports this module and must not wait for pyspark.
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", _python())
    # Without it Spark resolves the host name, finds a loopback address and warns.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    options = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # With no UI, Spark's status store still keeps the last 1,000 jobs, stages and SQL
        # executions (plans included), and its file status cache grows to 250 MB: the
        # JVM heap grew by ~100 MB per 1,000 statements (benchmarks/soak.py).
        **RETENTION_CONF,
        # A checkpointed MERGE source is freed once the JVM has collected it; Spark forces
        # that collection every 30 minutes by default.
        "spark.cleaner.periodicGC.interval": "5min",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": os.environ.get("TXSQL_DRIVER_MEMORY", "2g"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{_log4j_file()}",
        **REQUIRED_CONF,
    }
    _launch_jvm_quietly(options)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_spark(
    master: str = "local[*]",
    app_name: str = "txsql",
    announce: Callable[[str], None] | None = print,
) -> SparkSession:
    """The public way to start a quiet local session (``txsql.local_spark()``).

    The same session as :func:`local_session`; when this call launched the JVM,
    ``announce`` gets one line naming the file Spark's own output goes to.
    """
    # Deferred: %load_ext imports this module and must not wait for pyspark.
    from pyspark import SparkContext

    fresh = SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    spark = local_session(master, app_name)
    if fresh and announce is not None:
        announce(f"Local Spark {spark.version} started; its log: {spark_log_path()}")
    return spark


def spark_log_path() -> str:
    """The file a local session's JVM writes its output to (``$TXSQL_SPARK_LOG`` if set)."""
    default = os.path.join(tempfile.gettempdir(), f"txsql-spark-{os.getpid()}.log")
    return os.environ.get(SPARK_LOG_ENV) or default


def _log4j_file() -> str:
    # per process and rewritten each time: a file left by an earlier txsql never applies
    path = os.path.join(tempfile.gettempdir(), f"txsql-log4j2-{os.getpid()}.properties")
    with open(path, "w", encoding="utf-8") as out:
        out.write(_LOG4J2_PROPERTIES)
    return path


def _launch_jvm_quietly(options: Mapping[str, str]) -> None:
    """Launch the JVM (if this process has none yet) with its stderr sent to the log file.

    PySpark launches the JVM inside ``SparkContext`` with this process's stderr; its
    ``launch_gateway`` takes Popen arguments (a documented developer hook) but the
    context does not pass any, so the gateway is launched here first and the context
    adopts it. A JVM that already exists (an earlier session, or ``pyspark``/
    ``spark-submit`` which export ``PYSPARK_GATEWAY_PORT``) is left as it is.
    """
    # Deferred: %load_ext imports this module and must not wait for pyspark.
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        conf = SparkConf(loadDefaults=False)
        for key, value in options.items():
            conf.set(key, value)
        path = spark_log_path()
        with open(path, "ab") as log:
            try:
                gateway = launch_gateway(conf, popen_kwargs={"stderr": log, "stdout": log})
            except Exception as error:  # the reason is in the log, not on the console
                raise SparkStartError(
                    f"the local Spark JVM did not start: {type(error).__name__}: "
                    f"{str(error).strip()[:200]}. Its output: {_tail(path)}",
                    hint=f"Read {path}; check that Java 17+ is installed (JAVA_HOME).",
                ) from error
        SparkContext._ensure_initialized(gateway=gateway)


def _tail(path: str, lines: int = 5) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            last = log.read().strip().splitlines()[-lines:]
    except OSError:
        return "(unreadable)"
    return " | ".join(last) if last else "(empty)"


def prepare_session(spark: SparkSession) -> SparkSession:
    """Apply txsql's required settings to a session the user gave us (works on Connect)."""
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    return spark


def _python() -> str:
    return sys.executable


# --- starting Spark in the background at ``%load_ext txsql`` ----------------------------

# Set to "0" to start Spark only when the first statement needs it (no background start).
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
    # Deferred: %load_ext imports this module and must not wait for pyspark.
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
    ``warm_after`` runs once the session is handed out (txsql's own statement paths): a
    waiting cell never waits for it, and ``cancel_warm`` cancels its Spark jobs.
    """

    def __init__(
        self,
        start: Callable[[], SparkSession] | None = None,
        warm: Callable[[SparkSession, Callable[[], bool]], None] | None = warm_session,
        warm_after: Callable[[SparkSession, Callable[[], bool]], object] | None = None,
        cancel_warm: Callable[[SparkSession], None] | None = None,
    ) -> None:
        self._start = start if start is not None else local_session
        self._warm = warm
        self._warm_after = warm_after
        self._cancel_warm = cancel_warm
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._stage = "starting"
        self._waited_for = threading.Event()  # set once a cell waits: warming stops
        self._ready = threading.Event()  # the session (or the error) is there
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
                self._warm(session, self._keep_going)
            self.stage_seconds["warm"] = self.elapsed() - self.stage_seconds["start"]
            self._session = session
        except BaseException as error:  # re-raised, typed, by wait()
            self._error = error
            return
        finally:
            self._ready.set()
        if self._warm_after is not None:
            self._warm_after(session, self._keep_going)

    def _keep_going(self) -> bool:
        return not self._waited_for.is_set()

    @property
    def done(self) -> bool:
        """Whether the session (or its start's error) is ready for a cell."""
        return self._ready.is_set()

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def wait(
        self, on_tick: Callable[[float], None] | None = None, interval: float = 0.25
    ) -> SparkSession:
        """The started session; ``on_tick(seconds since start)`` runs while waiting.

        Waiting stops the warm-up after its current step (see :func:`warm_session`); the
        warm-up after the start (``warm_after``) is cancelled and not waited for.
        """
        self._waited_for.set()
        while not self._ready.wait(interval):
            if on_tick is not None:
                on_tick(self.elapsed())
        if self._error is not None:
            error = self._error
            first_line = (str(error).strip().splitlines() or [""])[0][:300]
            raise SparkStartError(
                f"{self._stage} Spark in the background failed: "
                f"{type(error).__name__}: {first_line}"
            ) from error
        assert self._session is not None
        if self._cancel_warm is not None and self._thread.is_alive():
            self._cancel_warm(self._session)
        return self._session
