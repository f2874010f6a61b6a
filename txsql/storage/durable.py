"""Writes that either complete durably or fail cleanly (local POSIX file systems).

``os.write`` may write fewer bytes than asked (a full disk, a file-size limit, a signal),
and a file's data and its directory entry only survive a power loss once fsynced. Every
file txsql writes goes through here: all bytes are written (short writes are continued,
and an error on the way is raised), the file is fsynced, and after it is linked or renamed
into place its directory is fsynced too. A failure removes the temporary file and raises a
:class:`~txsql.errors.StorageWriteError` (``DiskFullError`` for ENOSPC, EDQUOT, EFBIG).

CPython ignores SIGXFSZ, so a file-size limit (``ulimit -f``) shows up as a short write
followed by EFBIG instead of killing the process; ``_ignore_sigxfsz`` makes sure of it for
interpreters embedded without Python's signal setup.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import threading
import uuid
from collections.abc import Iterable

from txsql.errors import DiskFullError, StorageWriteError
from txsql.storage.crashpoints import crash_point, file_kind

logger = logging.getLogger(__name__)

TEMP_SUFFIX = ".tmp"
_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _ignore_sigxfsz() -> None:
    sigxfsz = getattr(signal, "SIGXFSZ", None)
    if sigxfsz is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(sigxfsz) == signal.SIG_DFL:
            signal.signal(sigxfsz, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover - exotic embeddings
        pass


_ignore_sigxfsz()


def write_error(path: str, exc: OSError, what: str = "write") -> StorageWriteError:
    """The typed error for an ``OSError`` raised while writing ``path``."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    message = f"could not {what} {path}: {reason}"
    if exc.errno in _FULL:
        return DiskFullError(message)
    return StorageWriteError(message)


def write_all(fd: int, data: bytes, path: str) -> None:
    """Write every byte of ``data`` to ``fd``, continuing after short writes.

    Raises:
        DiskFullError: The disk, quota or file-size limit is exhausted.
        StorageWriteError: Any other write error, or a write that makes no progress.
    """
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as exc:
            raise write_error(path, exc) from exc
        if written <= 0:
            # write() returning 0 for a non-empty buffer means no progress is possible.
            raise DiskFullError(f"could not write {path}: the file system accepted no more bytes")
        view = view[written:]


def fsync_dir(directory: str) -> None:
    """Make the entries of ``directory`` (new links, renames) durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(directory: str) -> None:
    """``os.makedirs`` that also fsyncs the parent of every directory it creates."""
    missing = []
    current = os.path.abspath(directory)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if not missing:
        return
    try:
        os.makedirs(directory, exist_ok=True)
        for created in reversed(missing):
            fsync_dir(os.path.dirname(created))
    except OSError as exc:
        raise write_error(directory, exc, "create directory") from exc


def temp_path_for(path: str) -> str:
    """A hidden, unique sibling of ``path`` (readers and listings skip dot files)."""
    name = f".{os.path.basename(path)}.{uuid.uuid4().hex}{TEMP_SUFFIX}"
    return os.path.join(os.path.dirname(path), name)


def write_temp(path: str, data: bytes) -> str:
    """Write ``data`` completely and fsynced into a new temp file next to ``path``.

    Returns the temp file's path. On failure the temp file is removed and a typed error
    raised; nothing appears under ``path``.
    """
    make_dirs(os.path.dirname(path))
    tmp = temp_path_for(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        raise write_error(path, exc, "create a temporary file for") from exc
    try:
        try:
            write_all(fd, data, path)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # fsync or close: EIO, or ENOSPC where space is allocated late
        remove_quietly(tmp)
        raise write_error(path, exc) from exc
    except BaseException:
        remove_quietly(tmp)
        raise
    return tmp


def publish_if_absent(tmp: str, path: str) -> None:
    """Link ``tmp`` to ``path`` (failing with ``FileExistsError``), drop ``tmp``, fsync.

    ``link`` fails atomically with EEXIST, even across processes, where ``rename`` would
    silently overwrite another writer's file.
    """
    kind = file_kind(path)
    crash_point(f"{kind}_temp_written")
    try:
        os.link(tmp, path)
    except FileExistsError:
        remove_quietly(tmp)
        raise
    except OSError as exc:
        remove_quietly(tmp)
        raise write_error(path, exc, "link") from exc
    crash_point(f"{kind}_linked")
    remove_quietly(tmp)
    _sync_published(path)


def publish_replace(tmp: str, path: str) -> None:
    """Atomically replace ``path`` with ``tmp`` (readers see old or new, never half)."""
    try:
        os.replace(tmp, path)
    except OSError as exc:
        remove_quietly(tmp)
        raise write_error(path, exc, "replace") from exc
    _sync_published(path)


def _sync_published(path: str) -> None:
    # The file is visible (other processes may already build on it), so a failing
    # directory fsync cannot be undone by deleting it; it is reported, not raised.
    try:
        fsync_dir(os.path.dirname(path))
    except OSError:
        logger.warning("could not fsync the directory of %s", path, exc_info=True)


def sync_files(paths: Iterable[str]) -> None:
    """fsync existing files written by someone else (Spark) and then their directories.

    Raises:
        StorageWriteError: A file or directory could not be synced.
    """
    directories: set[str] = set()
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise write_error(path, exc, "fsync") from exc
        directories.add(os.path.dirname(path))
    for directory in sorted(directories):
        try:
            fsync_dir(directory)
        except OSError as exc:
            raise write_error(directory, exc, "fsync directory") from exc


def remove_quietly(path: str) -> None:
    """Delete ``path`` if it exists; a leftover temp is harmless, so errors are logged."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        logger.warning("could not remove temporary file %s", path, exc_info=True)
