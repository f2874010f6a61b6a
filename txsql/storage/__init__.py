"""Bytes and paths: put-if-absent log stores and table file I/O (no Delta semantics)."""

from txsql.storage.filesystem import FileIO, FileStatus, LocalFileIO, MemoryFileIO
from txsql.storage.logstore import LogStore, log_store_for
from txsql.storage.paths import TableLocation, parse_location

__all__ = [
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "LogStore",
    "MemoryFileIO",
    "TableLocation",
    "log_store_for",
    "parse_location",
]
