"""The ``_delta_log`` directory of one table, with put-if-absent commits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from txsql.errors import VersionExistsError
from txsql.storage.factory import file_io_for
from txsql.storage.filesystem import FileIO, FileStatus
from txsql.storage.objectstore import ObjectStoreFileIO
from txsql.storage.paths import LOG_DIR, classify_log_file, commit_name, parse_location

_T = TypeVar("_T")
_R = TypeVar("_R")
# Concurrent reads when many log files come from an object store (each is a round trip).
PARALLEL_READS = 16


class LogStore:
    """Reads and writes the log of the table rooted at ``root`` through ``fs``."""

    def __init__(self, root: str, fs: FileIO) -> None:
        self.root = root.rstrip("/") or "/"
        self.fs = fs
        self.log_dir = f"{self.root}/{LOG_DIR}"

    def log_path(self, name: str) -> str:
        return f"{self.log_dir}/{name}"

    def map_reads(self, read: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``[read(i) for i in items]``, run concurrently on an object store (where every
        read is a network round trip) and in order on local or in-memory file systems.
        The first exception in item order is raised, as in the sequential loop."""
        todo = list(items)
        if len(todo) < 2 or not isinstance(self.fs, ObjectStoreFileIO):
            return [read(i) for i in todo]
        with ThreadPoolExecutor(max_workers=min(PARALLEL_READS, len(todo))) as pool:
            return list(pool.map(read, todo))

    def write_if_absent(self, version: int, data: bytes) -> None:
        """Create commit ``version``; raise :class:`VersionExistsError` if it exists.

        On a local file system the commit is complete and durable (file and directory
        fsynced) when this returns; a failed write raises ``StorageWriteError`` (or
        ``DiskFullError``) and leaves no file under the commit's name. On an object store
        it is one conditional PUT; before commit 0 (a new table) the store is probed, and
        one that ignores conditional writes is refused before any log byte is written.
        """
        if version == 0 and isinstance(self.fs, ObjectStoreFileIO):
            self.fs.verify_put_if_absent(self.log_dir)
        try:
            self.fs.write_if_absent(self.log_path(commit_name(version)), data)
        except FileExistsError:
            raise VersionExistsError(version) from None

    def read_commit(self, version: int) -> bytes:
        return self.fs.read(self.log_path(commit_name(version)))

    def read_log_file(self, name: str) -> bytes:
        return self.fs.read(self.log_path(name))

    def write_log_file(self, name: str, data: bytes) -> None:
        """Write a non-commit log file (checkpoint, ``_last_checkpoint``), replacing it
        atomically; a failure (``StorageWriteError``) leaves the previous file in place."""
        self.fs.write(self.log_path(name), data)

    def delete_log_file(self, name: str) -> None:
        self.fs.delete(self.log_path(name))

    def list_log(self) -> list[FileStatus]:
        """All files in ``_delta_log``, sorted by name (so by version)."""
        return sorted(self.fs.list_dir(self.log_dir), key=lambda f: f.name)

    def commit_status(self, version: int) -> FileStatus:
        return self.fs.stat(self.log_path(commit_name(version)))

    def list_commits(self) -> list[int]:
        versions = []
        for f in self.list_log():
            parsed = classify_log_file(f.name)
            if parsed is not None and parsed.kind == "commit":
                versions.append(parsed.version)
        return versions

    def latest_version(self) -> int | None:
        commits = self.list_commits()
        return commits[-1] if commits else None

    def exists(self) -> bool:
        return bool(self.list_commits())


def log_store_for(
    location: str,
    fs: FileIO | None = None,
    *,
    storage_options: Mapping[str, object] | None = None,
    hadoop_conf: Mapping[str, str] | None = None,
) -> LogStore:
    """A :class:`LogStore` for a path or URI, through ``fs`` or the location's own FileIO
    (see :func:`~txsql.storage.factory.file_io_for`)."""
    if fs is None:
        parsed = parse_location(location)
        return LogStore(parsed.root, file_io_for(parsed, storage_options, hadoop_conf))
    return LogStore(location, fs)
