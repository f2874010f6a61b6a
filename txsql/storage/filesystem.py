"""File I/O behind a small protocol: the local POSIX file system and an in-memory one.

Paths are absolute strings. ``write_if_absent`` is the primitive the whole commit protocol
rests on: it must never overwrite and never let a reader observe a partial file.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from txsql.storage.crashpoints import crash_point
from txsql.storage.durable import publish_if_absent, publish_replace, write_temp
from txsql.storage.paths import LOG_DIR


@dataclass(frozen=True, slots=True)
class FileStatus:
    """A file's name (relative to the listed directory), size and mtime in ms."""

    name: str
    size: int
    modification_time: int


class FileIO(Protocol):
    """What txsql needs from a file system."""

    def read(self, path: str) -> bytes: ...

    def read_range(self, path: str, offset: int, length: int) -> bytes: ...

    def write(self, path: str, data: bytes) -> None:
        """Write (or replace) a whole file atomically."""

    def write_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data``; raise ``FileExistsError`` if it exists."""

    def exists(self, path: str) -> bool: ...

    def stat(self, path: str) -> FileStatus: ...

    def list_dir(self, path: str) -> list[FileStatus]:
        """Regular files directly in ``path`` (empty if it does not exist)."""

    def list_tree(self, path: str) -> list[FileStatus]:
        """Every file below ``path`` at any depth, named relative to it with ``/``."""

    def delete(self, path: str) -> None: ...


class LocalFileIO:
    """POSIX file system. Writes go through :mod:`txsql.storage.durable`: a complete,
    fsynced temp file, then ``os.link`` (put-if-absent) or ``os.replace``, then a directory
    fsync; a failed write raises ``StorageWriteError`` and leaves nothing under the name."""

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def write(self, path: str, data: bytes) -> None:
        """Replace ``path`` atomically and durably (raises ``StorageWriteError``)."""
        publish_replace(write_temp(path, data), path)

    def write_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` durably; ``FileExistsError`` if it exists, else all or nothing."""
        publish_if_absent(write_temp(path, data), path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def stat(self, path: str) -> FileStatus:
        st = os.stat(path)
        return FileStatus(os.path.basename(path), st.st_size, int(st.st_mtime * 1000))

    def list_dir(self, path: str) -> list[FileStatus]:
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            if e.name.startswith("."):
                continue  # in-flight temp files of concurrent writers (and .crc side files)
            try:
                if not e.is_file():
                    continue
                st = e.stat()
            except FileNotFoundError:
                continue  # deleted between listing and stat by another writer
            out.append(FileStatus(e.name, st.st_size, int(st.st_mtime * 1000)))
        return out

    def list_tree(self, path: str) -> list[FileStatus]:
        out = []
        for directory, _, names in os.walk(path):
            for name in names:
                full = os.path.join(directory, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue  # deleted while walking
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                out.append(FileStatus(rel, st.st_size, int(st.st_mtime * 1000)))
        return out

    def delete(self, path: str) -> None:
        os.unlink(path)
        if os.path.basename(os.path.dirname(path)) == LOG_DIR:
            crash_point("log_cleanup")


class MemoryFileIO:
    """A thread-safe in-memory file system for tests and demos."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()

    def read(self, path: str) -> bytes:
        with self._lock:
            if path not in self._files:
                raise FileNotFoundError(path)
            return self._files[path][0]

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        return self.read(path)[offset : offset + length]

    def write(self, path: str, data: bytes) -> None:
        with self._lock:
            self._files[path] = (bytes(data), int(time.time() * 1000))

    def write_if_absent(self, path: str, data: bytes) -> None:
        with self._lock:
            if path in self._files:
                raise FileExistsError(path)
            self._files[path] = (bytes(data), int(time.time() * 1000))

    def exists(self, path: str) -> bool:
        with self._lock:
            return path in self._files

    def stat(self, path: str) -> FileStatus:
        with self._lock:
            if path not in self._files:
                raise FileNotFoundError(path)
            data, mtime = self._files[path]
            return FileStatus(os.path.basename(path), len(data), mtime)

    def list_dir(self, path: str) -> list[FileStatus]:
        prefix = path.rstrip("/") + "/"
        with self._lock:
            return [
                FileStatus(p[len(prefix) :], len(d), m)
                for p, (d, m) in self._files.items()
                if p.startswith(prefix) and "/" not in p[len(prefix) :]
            ]

    def list_tree(self, path: str) -> list[FileStatus]:
        prefix = path.rstrip("/") + "/"
        with self._lock:
            return [
                FileStatus(p[len(prefix) :], len(d), m)
                for p, (d, m) in self._files.items()
                if p.startswith(prefix)
            ]

    def delete(self, path: str) -> None:
        with self._lock:
            if self._files.pop(path, None) is None:
                raise FileNotFoundError(path)

    def set_modification_time(self, path: str, mtime_ms: int) -> None:
        """Test helper: pretend a file was written at ``mtime_ms``."""
        with self._lock:
            self._files[path] = (self._files[path][0], mtime_ms)
