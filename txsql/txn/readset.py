"""What a transaction read: the read set the conflict checker validates winners against.

The planner reports every scan as a predicate plus the files it read after pruning and,
when it can, the physical row indexes it matched per file. Reads that cannot be described
that precisely (``mark_read_whole_table``) make every check fall back to the file level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote

from pyroaring import BitMap64

from txsql.log.actions import AddFile
from txsql.log.predicates import TRUE, Predicate, is_deterministic


def norm_path(path: str) -> str:
    """Paths compare URI-decoded, as log replay keys them.

    >>> norm_path("a%20b.parquet")
    'a b.parquet'
    """
    return unquote(path)


@dataclass(frozen=True)
class ScanRecord:
    """One scan: its predicate and the (normalized) paths it read."""

    predicate: Predicate
    paths: tuple[str, ...]

    @property
    def deterministic(self) -> bool:
        return is_deterministic(self.predicate)


@dataclass(frozen=True)
class JoinRead:
    """Target rows that join with a MERGE's source.

    Attributes:
        on: The ON condition, Spark SQL with every column qualified by its side's alias.
        target_alias: The alias the target's columns are qualified with in ``on``.
        source_alias: The alias the source's columns are qualified with in ``on``.
        target_filter: ON's target-only conjuncts (``TRUE`` if none): a row failing it
            joins with nothing, so files whose stats rule it out need no join check.
        files: The files the MERGE read, as it read them (path and deletion vector).
        source: The source rows as of the statement; opaque here (the hook knows it).
    """

    on: str
    target_alias: str
    source_alias: str
    target_filter: Predicate
    files: tuple[AddFile, ...]
    source: Any = field(compare=False, hash=False, repr=False)

    @cached_property
    def _by_path(self) -> dict[str, AddFile]:
        return {norm_path(f.path): f for f in self.files}

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._by_path)

    def file(self, path: str) -> AddFile | None:
        """The file at ``path`` as the MERGE read it (None: not read by this join)."""
        return self._by_path.get(path)


@dataclass
class ReadSet:
    """Everything the transaction read, accumulated over its statements.

    Attributes:
        scans: Predicates with the files each scan read.
        read_whole_table: A read that cannot be scoped (file-level rule for everything).
        files: Normalized paths of every file read.
        file_dvs: The DV unique id each read file had when read (None: no DV).
        rows: Physical row indexes matched per read file, for files whose scan reported
            them; a read file missing here (or listed in ``rows_unknown``, read by a scan
            that did not report rows) is only known at the file level.
        app_ids: App ids looked up (exactly-once writers).
        metadata_read: Whether schema/properties were read (informational: any winning
            metadata change that is not allow-listed conflicts anyway).
        joins: MERGE reads "target rows joining our source" (:mod:`txsql.txn.join_read`);
            their files are in ``files`` and their matched rows in ``rows``.
    """

    scans: list[ScanRecord] = field(default_factory=list)
    read_whole_table: bool = False
    files: set[str] = field(default_factory=set)
    file_dvs: dict[str, str | None] = field(default_factory=dict)
    rows: dict[str, BitMap64] = field(default_factory=dict)
    app_ids: set[str] = field(default_factory=set)
    metadata_read: bool = False
    rows_unknown: set[str] = field(default_factory=set)
    joins: list[JoinRead] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when no data was read (app ids and metadata do not count, as in Delta)."""
        return not (self.read_whole_table or self.files or self.scans or self.joins)

    def record_scan(
        self,
        predicate: Predicate,
        files: Sequence[AddFile],
        matched_rows: Mapping[str, BitMap64] | None = None,
    ) -> None:
        """Add a scan; ``matched_rows`` (path -> row indexes) makes its files row-level."""
        paths = tuple(norm_path(f.path) for f in files)
        self.scans.append(ScanRecord(predicate, paths))
        for f, path in zip(files, paths):
            self.files.add(path)
            self.file_dvs.setdefault(path, f.dv_id)
        if matched_rows is None:
            self.rows_unknown.update(paths)
            return
        matched = {norm_path(k): v for k, v in matched_rows.items()}
        for path in paths:
            # A read file absent from matched_rows matched no row: an empty set, not unknown.
            rows = self.rows.setdefault(path, BitMap64())
            rows |= matched.get(path, BitMap64())

    def record_paths(self, paths: Sequence[str]) -> None:
        """Files read without a predicate (Delta's rule: as if read with ``TRUE``)."""
        normalized = tuple(norm_path(p) for p in paths)
        self.scans.append(ScanRecord(TRUE, normalized))
        self.files.update(normalized)
        self.rows_unknown.update(normalized)

    def rows_known(self, path: str) -> bool:
        """Whether every scan that read ``path`` reported the rows it matched there."""
        return path in self.rows and path not in self.rows_unknown
