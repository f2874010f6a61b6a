"""Bytes and paths: put-if-absent log stores and table file I/O (no Delta semantics)."""

from txsql.storage.factory import file_io_for
from txsql.storage.filesystem import FileIO, FileStatus, LocalFileIO, MemoryFileIO
from txsql.storage.logstore import LogStore, log_store_for
from txsql.storage.objectstore import ObjectStoreFileIO
from txsql.storage.paths import TableLocation, parse_location

__all__ = [
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "LogStore",
    "MemoryFileIO",
    "ObjectStoreFileIO",
    "TableLocation",
    "file_io_for",
    "log_store_for",
    "parse_location",
]
