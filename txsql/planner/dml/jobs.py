"""Counting the Spark jobs a statement triggers, without touching the JVM.

Every Spark action txsql runs on behalf of a statement (a ``collect``, a ``write``) goes
through :func:`count_job`, which adds to the counter of the statement running in this
context (a :class:`contextvars.ContextVar`, so concurrent statements in threads do not mix).
Statements report the total as ``spark_jobs`` in ``Result.metrics`` and their plan in
EXPLAIN. A test checks the figure against Spark's own status tracker; core code never reads
``sparkContext`` (it does not exist on Spark Connect).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass
class JobCounter:
    """Spark jobs triggered so far by the statement that owns this counter."""

    jobs: int = 0


LOG = logging.getLogger("txsql.jobs")
_CURRENT: ContextVar[JobCounter | None] = ContextVar("txsql_job_counter", default=None)


@contextlib.contextmanager
def counting_jobs() -> Iterator[JobCounter]:
    """Count the jobs :func:`count_job` runs inside the block (nested blocks count too)."""
    outer = _CURRENT.get()
    counter = JobCounter()
    token = _CURRENT.set(counter)
    try:
        yield counter
    finally:
        _CURRENT.reset(token)
        if outer is not None:
            outer.jobs += counter.jobs


def count_job(action: Callable[[], T], jobs: int = 1) -> T:
    """Run one Spark action (``jobs`` Spark jobs) and add it to the current counter.

    Each action's wall time goes to the ``txsql.jobs`` logger at DEBUG (benchmarks/dml.py
    prints a statement's phases from it)."""
    counter = _CURRENT.get()
    if counter is not None:
        counter.jobs += jobs
    if not LOG.isEnabledFor(logging.DEBUG):
        return action()
    started = time.perf_counter()
    try:
        return action()
    finally:
        LOG.debug("spark action took %.3f s", time.perf_counter() - started)
