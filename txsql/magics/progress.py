"""A live progress line under the cell while Spark works, removed when the cell finishes.

Classic PySpark is polled through ``statusTracker()``; Spark Connect pushes progress to a
registered handler. Nothing shows for statements faster than ``delay`` seconds, so quick
cells stay clean. Ctrl-C (a kernel interrupt) cancels the running Spark jobs and re-raises,
so the statement stops before its commit and nothing is written.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from IPython.display import display

from txsql.magics.render import MUTED, duration, esc


@dataclass(frozen=True, slots=True)
class StageProgress:
    """Tasks done of the stages Spark is running now."""

    stages: int
    done_tasks: int
    total_tasks: int


class Display(Protocol):
    """Where the progress line goes: create, update and clear one output area."""

    def show(self, text: str, html: str) -> None: ...

    def clear(self) -> None: ...


class IPythonDisplay:
    """An updatable IPython display (works in Jupyter kernels; one output area per cell)."""

    def __init__(self) -> None:
        self._handle: Any = None

    def show(self, text: str, html: str) -> None:
        bundle = {"text/plain": text, "text/html": html}
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)

    def clear(self) -> None:
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)
            self._handle = None


class Progress:
    """Context manager showing ``⏳ label · phase · tasks · time`` while its block runs.

    Args:
        spark: the SparkSession whose jobs to watch and, on interrupt, cancel.
        label: what is running (``UPDATE t``).
        display: where to draw; None to draw nothing (interrupts still cancel jobs).
        delay: seconds before the line first appears.
        interval: seconds between updates.
    """

    def __init__(
        self,
        spark: Any,
        label: str,
        *,
        display: Display | None = None,
        delay: float = 1.0,
        interval: float = 0.5,
    ) -> None:
        self.spark = spark
        self.label = label
        self.display = display
        self.delay = delay
        self.interval = interval
        self.phase_name = ""
        self.shown = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._connect_stages: StageProgress | None = None
        self._handler: Callable[..., None] | None = None

    def phase(self, name: str) -> None:
        """Name what happens now (``run 2/3: UPDATE``, ``fetch rows``)."""
        self.phase_name = name

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self.display is not None:
            self._watch_connect()
            # copy the context so output in a kernel thread goes to this cell
            context = contextvars.copy_context()
            self._thread = threading.Thread(
                target=context.run, args=(self._loop,), name="txsql-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._unwatch_connect()
        if self.display is not None and self.shown:
            self.display.clear()
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            cancel_spark_jobs(self.spark)
        # never swallow the exception: an interrupted statement must not look successful

    def line(self) -> tuple[str, str]:
        """The current progress line as (text, html)."""
        parts = [f"⏳ {self.label}"]
        if self.phase_name:
            parts.append(self.phase_name)
        stages = self.stage_progress()
        if stages is not None and stages.total_tasks:
            parts.append(
                f"{stages.done_tasks}/{stages.total_tasks} tasks"
                + (f" in {stages.stages} stages" if stages.stages > 1 else "")
            )
        parts.append(duration((time.monotonic() - self._started) * 1000))
        text = " · ".join(parts)
        bar = ""
        if stages is not None and stages.total_tasks:
            bar = (
                f' <progress value="{stages.done_tasks}" max="{stages.total_tasks}" '
                'style="height:8px;width:120px;vertical-align:middle"></progress>'
            )
        return (
            text,
            f'<div class="txsql-progress" style="{MUTED};font-size:12px">{esc(text)}{bar}</div>',
        )

    def stage_progress(self) -> StageProgress | None:
        """Progress of the active stages (classic: polled; Connect: last pushed update)."""
        if self._connect_stages is not None:
            return self._connect_stages
        try:
            tracker = self.spark.sparkContext.statusTracker()
            infos = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
        except Exception:
            return None  # Spark Connect has no sparkContext; a stopped context neither
        infos = [i for i in infos if i is not None]
        return StageProgress(
            stages=len(infos),
            done_tasks=sum(i.numCompletedTasks for i in infos),
            total_tasks=sum(i.numTasks for i in infos),
        )

    def _loop(self) -> None:
        if self._stop.wait(self.delay):
            return
        last = ""
        while not self._stop.is_set():
            text, html = self.line()
            if text != last and self.display is not None:
                self.display.show(text, html)
                self.shown += 1
                last = text
            self._stop.wait(self.interval)

    def _watch_connect(self) -> None:
        if not type(self.spark).__module__.startswith("pyspark.sql.connect"):
            return  # classic sessions raise ONLY_SUPPORTED_WITH_SPARK_CONNECT; poll instead

        def handler(stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
            infos = [s for s in (stages or []) if not s.done]
            self._connect_stages = StageProgress(
                stages=len(infos),
                done_tasks=sum(s.num_completed_tasks for s in infos),
                total_tasks=sum(s.num_tasks for s in infos),
            )

        try:
            self.spark.registerProgressHandler(handler)
            self._handler = handler
        except Exception:
            self._handler = None

    def _unwatch_connect(self) -> None:
        if self._handler is not None:
            with contextlib.suppress(Exception):
                self.spark.removeProgressHandler(self._handler)
            self._handler = None


def cancel_spark_jobs(spark: Any) -> None:
    """Stop whatever Spark runs for this session (Connect and classic Spark 4)."""
    interrupt = getattr(spark, "interruptAll", None)
    if interrupt is not None:
        try:
            interrupt()
            return
        except Exception:
            pass  # a classic session too old to interrupt: cancel its jobs instead
    # best effort: the KeyboardInterrupt is re-raised either way
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()
