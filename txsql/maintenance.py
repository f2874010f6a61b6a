"""Idle maintenance: a worker thread owned by a :class:`~txsql.session.Session`.

When no statement has run for ``idle_seconds`` the worker runs the steps of
:data:`txsql.planner.operations.maintenance.STEPS` on the tables the session wrote, one
table and one step at a time. A statement's start calls :meth:`Maintenance.busy`, which
interrupts the worker's Spark jobs by tag (``SparkSession.interruptTag``, classic and
Connect alike) and waits at most ``BUSY_WAIT`` for the step to let go. The thread is
started by ``start`` and joined by ``stop`` (the session's close and atexit), never left
stray. What it did goes to the ``txsql.maintenance`` logger, not to the cell.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from txsql.engine.spark import spark_log_path
from txsql.errors import MaintenanceStoppedError
from txsql.planner.operations.maintenance import STEPS, Step
from txsql.planner.sql.refs import TableRef

LOG = logging.getLogger("txsql.maintenance")
TAG = "txsql-idle-maintenance"
DEFAULT_IDLE_SECONDS = 3.0
BUSY_WAIT = 0.1


class Maintenance:
    """Scheduler: idleness, the worker thread, cancellation."""

    def __init__(
        self,
        spark: object,
        run_step: Callable[[Step, TableRef], object],
        tables: Callable[[], Iterable[TableRef]],
        skip: Callable[[TableRef], str | None],
        may_run: Callable[[], bool],
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
    ) -> None:
        self._spark = spark
        self._run_step = run_step
        self._tables = tables
        self._skip = skip
        self._may_run = may_run
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._busy = 0
        self._last_end = time.monotonic()
        self._stopping = False
        self._working = threading.Event()
        # Held by a maintenance commit (the check that no statement started, then the put):
        # a starting statement takes it once, so it never overlaps a maintenance commit.
        self._commit_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def stop_requested(self) -> bool:
        """A statement started or the worker is stopping: the step must not commit."""
        return self._busy > 0 or self._stopping

    @property
    def working(self) -> bool:
        """A step is under way (the worker found the session idle and started)."""
        return self._working.is_set()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._thread is not None:
            return
        _log_to_session_file()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=TAG, daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        with self._lock:
            self._stopping = True
            self._idle.notify_all()
        self._interrupt()
        thread.join()
        self._thread = None
        atexit.unregister(self.stop)

    @contextlib.contextmanager
    def commit_gate(self) -> Iterator[None]:
        """Around a maintenance commit: refused once a statement started."""
        with self._commit_lock:
            if self.stop_requested:
                raise MaintenanceStoppedError(
                    "idle maintenance stopped before its commit: a statement started"
                )
            yield

    def busy(self) -> None:
        """A statement starts: stop maintenance now and wait at most ``BUSY_WAIT`` (plus a
        maintenance commit already under way: one put, so the statement reads after it)."""
        with self._lock:
            self._busy += 1
        if self._working.is_set():
            self._interrupt()
            with self._commit_lock:
                pass
            deadline = time.monotonic() + BUSY_WAIT
            while self._working.is_set() and time.monotonic() < deadline:
                time.sleep(0.005)

    def done(self) -> None:
        with self._lock:
            self._busy = max(0, self._busy - 1)
            self._last_end = time.monotonic()
            self._idle.notify_all()

    def _interrupt(self) -> None:
        # No job to interrupt (or a session already stopped) is fine.
        with contextlib.suppress(Exception):
            self._spark.interruptTag(TAG)  # type: ignore[attr-defined]

    def _wait_idle(self, last_work: float | None) -> bool:
        """Wait until the session has been idle ``idle_seconds`` since a statement ended
        that maintenance has not yet followed up (``last_work``); False when stopping.
        ``_working`` is set only from here to the end of the pass, so a statement that
        starts while maintenance merely waits pays nothing."""
        with self._lock:
            while not self._stopping:
                fresh = self._last_end != last_work
                wait = self._last_end + self.idle_seconds - time.monotonic()
                if self._busy == 0 and fresh and wait <= 0:
                    self._working.set()
                    return True
                waiting = self._busy == 0 and fresh
                self._idle.wait(max(wait, 0.05) if waiting else None)
            return False

    def _loop(self) -> None:
        last_work: float | None = None
        while self._wait_idle(last_work):
            try:
                last_work = self._last_end  # a statement's end brings the next pass
                if self._may_run():
                    self._maintain_all()
            finally:
                self._working.clear()

    def _maintain_all(self) -> None:
        for ref in list(self._tables()):
            try:  # once per table and pass (it may read the coordinator's records)
                reason = self._skip(ref)
            except Exception as e:
                reason = str(e)
            if reason is not None:
                LOG.info("maintenance of %s skipped: %s", ref, reason)
                continue
            for step in STEPS:
                if self._busy or self._stopping:
                    return
                try:
                    result = self._run_step(step, ref)
                    LOG.info("maintenance %s on %s: %s", step.name, ref, result)
                except Exception as e:
                    LOG.info("maintenance %s on %s abandoned: %s", step.name, ref, e)


def _log_to_session_file() -> None:
    """Maintenance reports go to the session's log file (Spark's, opened for appending by
    both), never to the cell: without a handler Python would print warnings on stderr."""
    if any(isinstance(h, logging.FileHandler) for h in LOG.handlers):
        return
    handler = logging.FileHandler(log_path(), encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s txsql maintenance: %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False


def log_path() -> str:
    """The file maintenance logs to: the session's log (``$TXSQL_SPARK_LOG`` if set)."""
    return spark_log_path()
