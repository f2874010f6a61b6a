"""Spark resources released at statement boundaries, never from the garbage collector.

A finalizer (``weakref.finalize``, ``__del__``, a ``gc.callbacks`` hook) runs whenever
Python's cyclic GC runs, which can be in the middle of a Py4J call on the same thread.
A JVM call from there re-enters Py4J's socket reader (``RuntimeError: reentrant call
inside <_io.BufferedReader>``) and corrupts the connection for the rest of the session.

So a finalizer only queues its release here (``deque.append`` takes no lock and calls
nothing), and the session drains the queue on its own thread between statements, when no
Py4J call is in flight.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

logger = logging.getLogger(__name__)

_pending: deque[Callable[[], object]] = deque()


def release_later(release: Callable[[], object]) -> None:
    """Queue ``release`` (e.g. a DataFrame's ``unpersist``) for the next statement boundary.

    Safe from a finalizer: it makes no JVM call and takes no lock.
    """
    _pending.append(release)


def pending_releases() -> int:
    """How many releases wait for the next statement boundary."""
    return len(_pending)


def drain_releases() -> int:
    """Run every queued release on this thread; return how many ran.

    Call only where no Spark call is in flight on this thread (between statements). A
    failing release is logged and skipped: the session may have stopped, and a cache that
    cannot be dropped must not fail the user's next statement.
    """
    ran = 0
    while True:
        try:
            release = _pending.popleft()
        except IndexError:
            return ran
        try:
            release()
        except Exception:
            logger.debug("a queued Spark release failed", exc_info=True)
        ran += 1


__all__ = ["drain_releases", "pending_releases", "release_later"]
