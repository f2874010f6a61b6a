"""Per-session caches of the scan layer: planned scans, expanded deletion vectors and the
paths Spark reports for data files.

All are keyed by what makes their content immutable (a session plus a table version's
files and DV ids, or a data file's name, never reused), so a hit is never stale; all are
small LRUs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class ScanCache:
    """Planned scans of recent table versions, per session (a small LRU of DataFrames).

    Planning a scan lists the files through Spark and builds per-file tables: 0.1-0.3 s on
    ``local[2]``, as much as a warm scan of 5M rows costs. A table version's files are
    immutable, so a notebook querying the same version again reuses the plan.
    """

    def __init__(self, max_entries: int = 32) -> None:
        self._entries: OrderedDict[tuple[Any, ...], DataFrame] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> DataFrame | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple[Any, ...], df: DataFrame) -> None:
        with self._lock:
            self._entries[key] = df
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)


class DeletedRowsCache:
    """Expanded DV keys of recent scans, cached in Spark memory.

    DV files are immutable and named by their descriptors, so a (session, file, DV id) set
    always expands to the same rows. Caching skips the Python expansion stage (0.4-0.6 s on
    ``local[2]``) when a notebook queries the same table version again. Bounded by entries
    and by deleted rows (8-16 bytes each in the cache).
    """

    def __init__(self, max_entries: int = 16, max_rows: int = 20_000_000) -> None:
        self._entries: OrderedDict[tuple[Any, ...], tuple[DataFrame, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_rows = max_rows
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> DataFrame | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def discard(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            hit = self._entries.pop(key, None)
        if hit is not None:
            hit[0].unpersist()

    def put(
        self, key: tuple[Any, ...], rows: DataFrame, count: int, persist: bool = True
    ) -> DataFrame:
        """Keep ``rows`` (``count`` of them); ``persist=False`` for rows that are already
        local data or a checkpoint, which a Spark cache would only copy once more."""
        if count > self._max_rows:
            return rows
        cached = rows.cache() if persist else rows
        with self._lock:
            self._entries[key] = (cached, count)
            while len(self._entries) > self._max_entries or (
                sum(n for _, n in self._entries.values()) > self._max_rows
            ):
                _, (old, _) = self._entries.popitem(last=False)
                old.unpersist()  # a no-op for rows that were never persisted
        return cached


class SparkPathCache:
    """How Spark names each data file (``_metadata.file_path``), per session.

    Learning it costs ``DataFrame.inputFiles()``: one JVM round trip per file on classic
    PySpark, for every new table version, although a data file never changes its name. A
    file enters only after Spark listed it, so a file Spark would skip (a name starting
    with ``_`` or ``.``) is never taken for read.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self._entries: OrderedDict[tuple[int, str], str] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def get_all(self, session: int, local_paths: list[str]) -> list[str] | None:
        """Spark's paths of all ``local_paths``, or None if one is unknown."""
        with self._lock:
            found = [self._entries.get((session, p)) for p in local_paths]
            if any(p is None for p in found):
                return None
            for p in local_paths:
                self._entries.move_to_end((session, p))
            return [p for p in found if p is not None]

    def put(self, session: int, pairs: dict[str, str]) -> None:
        with self._lock:
            for local, spark_path in pairs.items():
                self._entries[(session, local)] = spark_path
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
