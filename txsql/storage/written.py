"""The files a transaction wrote that no commit names yet, and whether they still exist.

A statement writes its data, deletion-vector and change-data files before it commits.
Until the commit names them they are nobody else's: if the transaction ends without
committing (ROLLBACK, a refused statement, a conflict, retries exhausted) they are
orphans, and txsql deletes them right away instead of leaving them for VACUUM. Knowing
which files are ours must not be a guess (RESTORE, CLONE and CONVERT name files that
already exist, and deleting those would lose rows), so the writers record each file they
create, at the moment they create it, into the ledger of the transaction the statement
runs in:

* :func:`recording` (or :func:`activate`) makes a :class:`WrittenFiles` ledger the
  current one for this thread (a context variable: other threads and Spark's callback
  threads keep their own);
* the writers (``engine/write.py`` after each hard link, ``dv/store.py`` after each DV
  file, the object-store path for its fresh directory) call :func:`record_written` /
  :func:`record_written_directory`; with no ledger active they record nothing.

What is deleted, and the checks that make it safe, is :mod:`txsql.txn.commit.own_files`.

:func:`missing_files` is the other half: right before its put-if-absent a commit makes
sure the files it adds still exist (one ``stat`` per file locally, one HEAD per object on
a store, 16 in flight), so a file deleted after it was written fails the commit instead
of being named by it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from txsql.storage.filesystem import FileIO
from txsql.storage.objectstore import ObjectStoreFileIO

# HEAD requests in flight when checking files on an object store (each is a round trip).
PARALLEL_CHECKS = 16


@dataclass(frozen=True)
class Written:
    """What a ledger held when it was taken: files, and directories that are ours whole."""

    files: frozenset[str] = frozenset()
    directories: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.files or self.directories)


class WrittenFiles:
    """The ledger of one transaction: paths of the files it created, not yet committed.

    Once taken (the transaction committed, rolled back or failed) it is closed: later
    records are ignored, so a file can never be attributed to a finished transaction.
    """

    def __init__(self) -> None:
        self._files: set[str] = set()
        self._directories: set[str] = set()
        self._closed = False
        self._lock = threading.Lock()

    def add_file(self, path: str) -> None:
        with self._lock:
            if not self._closed:
                self._files.add(path)

    def add_directory(self, path: str) -> None:
        """A directory created for this transaction alone (every file below it is ours)."""
        with self._lock:
            if not self._closed:
                self._directories.add(path)

    def take(self, *, close: bool) -> Written:
        """Empty the ledger and return what it held; ``close`` also ends recording."""
        with self._lock:
            taken = Written(frozenset(self._files), frozenset(self._directories))
            self._files.clear()
            self._directories.clear()
            self._closed = self._closed or close
            return taken

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closed


_ACTIVE: contextvars.ContextVar[WrittenFiles | None] = contextvars.ContextVar(
    "txsql_written_files", default=None
)


def activate(ledger: WrittenFiles | None) -> contextvars.Token[WrittenFiles | None]:
    """Make ``ledger`` the current one; pass the token to :func:`deactivate` to undo."""
    return _ACTIVE.set(ledger)


def deactivate(token: contextvars.Token[WrittenFiles | None]) -> None:
    """Restore the ledger that was current before the :func:`activate` of ``token``."""
    with contextlib.suppress(ValueError, RuntimeError):  # used already, or another context
        _ACTIVE.reset(token)


@contextlib.contextmanager
def recording(ledger: WrittenFiles) -> Iterator[None]:
    """Record the files written inside the block into ``ledger``."""
    token = activate(ledger)
    try:
        yield
    finally:
        deactivate(token)


def record_written(path: str) -> None:
    """A writer created the file ``path`` (no-op without an active ledger)."""
    ledger = _ACTIVE.get()
    if ledger is not None:
        ledger.add_file(path)


def record_written_directory(path: str) -> None:
    """A writer is about to fill the fresh directory ``path`` (object stores: Spark writes
    straight there, so a failed job's partial files are found by listing it)."""
    ledger = _ACTIVE.get()
    if ledger is not None:
        ledger.add_directory(path)


def missing_files(fs: FileIO, paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that do not exist on ``fs``, sorted.

    One ``stat`` per path on a local file system; one HEAD per object on an object store,
    run concurrently (stores have no batch HEAD, and a LIST of a table's prefix would cost
    more than the few files one commit adds).
    """
    todo = sorted(set(paths))
    if len(todo) > 1 and isinstance(fs, ObjectStoreFileIO):
        with ThreadPoolExecutor(max_workers=min(PARALLEL_CHECKS, len(todo))) as pool:
            present = list(pool.map(fs.exists, todo))
    else:
        present = [fs.exists(p) for p in todo]
    return [p for p, here in zip(todo, present) if not here]
