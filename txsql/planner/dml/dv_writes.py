"""Marking rows deleted: deletion vectors (bitmaps built on executors, one DV file written by
the driver), or copy-on-write.

DELETE, UPDATE and MERGE all end with "these target rows are gone": a DataFrame of
``(_file, _row_index)`` pairs. :func:`mark_rows_deleted` turns it into the actions Delta
Spark commits (PROTOCOL.md "Deletion Vectors"; ARCHITECTURE.md, "What a DML commits"):

* ONE Spark job. When the matched rows are known to be few (at most ``DIRECT_ROWS``: the
  caller's bound, or the candidate files' ``numRecords``), the job collects them as Arrow,
  16 bytes a row (``crc32`` of the file, row index), and the driver groups them: no Python
  stage, which costs ~0.1 s per job on ``local[2]`` whatever its size. Otherwise each scan
  task groups its pairs into one bitmap per file (numpy, no Python loop over rows) and
  returns ``(file, serialized bitmap)`` rows; no shuffle by file (with AQE every shuffle is
  a job of its own). Either way the driver holds at most ``DIRECT_ROWS`` pairs or the
  per-file bitmaps of matched rows (the read set needs them anyway), unions the pieces of
  a file, subtracts the file's current DV (so a scan that ignored DVs is fine), and writes
  ALL new DVs of the statement into ONE ``deletion_vector_<uuid>.bin``.
* Per file the driver emits ``remove(F, oldDV)`` + ``add(F, newDV)`` (stats loosened to
  ``tightBounds: false``), or only ``remove(F)`` when every row of F is now deleted.
* Without DVs (``delta.enableDeletionVectors`` off, the feature missing, or a file lacking
  ``numRecords``) the touched files are rewritten without the deleted rows: copy-on-write.
  The rewrite filters by the bitmaps the first pass returned, so a non-deterministic
  condition is evaluated exactly once.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64
from pyspark.sql import functions as F

from txsql.dv.store import read_deletion_vector, write_deletion_vectors
from txsql.engine.names import fresh_names
from txsql.engine.scan import resolve_path, scan_snapshot, snapshot_row_ids
from txsql.engine.schema import quote
from txsql.engine.write import write_data_files
from txsql.errors import TxSqlError
from txsql.log import features, properties
from txsql.log.actions import Action, AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.dml.jobs import count_job
from txsql.storage.factory import delete_quietly, file_io_for
from txsql.txn.rowlevel.state import loosen_stats, num_records, total_records

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from txsql.planner.context import RunContext

# Bases of the column names of expanded deleted rows (made fresh against the scan's).
_DEL_PATH = "_txsql_deleted_file"
_DEL_ROW = "_txsql_deleted_row"
# What each executor task returns: one row per file it saw matched rows of.
_FOUND = pa.schema([("path", pa.string()), ("rows", pa.binary())])
_FOUND_DDL = "path string, rows binary"
# Matched rows up to which they are collected as (crc32 of file, row index) pairs: 16 MB
# of Arrow on the driver at most, for a job without a Python stage.
DIRECT_ROWS = 1_000_000


@dataclass
class DeletionOutcome:
    """The actions and counters of marking rows deleted.

    Attributes:
        actions: remove/add actions to stage (DV updates, whole-file removes, rewrites).
        num_deleted_rows: Rows newly deleted (distinct).
        num_removed_files: Files removed outright (all rows deleted, or rewritten).
        num_added_files: New data files (copy-on-write rewrites only).
        num_dvs_added: Files that had no DV and now have one.
        num_dvs_updated: Files whose DV was replaced by a larger one.
        num_dvs_removed: Files with a DV that were removed or rewritten.
        num_copied_rows: Rows copied into rewritten files (copy-on-write).
        num_removed_bytes: Bytes of removed files.
        num_added_bytes: Bytes of new data files.
        rewrite_time_ms: Time spent rewriting files (copy-on-write).
        matched_rows_by_file: Newly deleted physical row indexes per file path (read set).
        touched_files: The files (as read) that lost rows.
        written_paths: Absolute paths of the DV and data files written (for cleanup).
    """

    actions: list[Action] = field(default_factory=list)
    num_deleted_rows: int = 0
    num_removed_files: int = 0
    num_added_files: int = 0
    num_dvs_added: int = 0
    num_dvs_updated: int = 0
    num_dvs_removed: int = 0
    num_copied_rows: int = 0
    num_removed_bytes: int = 0
    num_added_bytes: int = 0
    rewrite_time_ms: int = 0
    matched_rows_by_file: dict[str, BitMap64] = field(default_factory=dict)
    touched_files: list[AddFile] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)

    def dv_counts(self, prefix: str = "num") -> dict[str, int]:
        """Delta's DV counters, as :mod:`txsql.planner.metrics` fields: added and removed
        both include updated DVs. ``prefix="num_target"`` gives MERGE's."""
        return {
            f"{prefix}_deletion_vectors_added": self.num_dvs_added + self.num_dvs_updated,
            f"{prefix}_deletion_vectors_removed": self.num_dvs_removed + self.num_dvs_updated,
            f"{prefix}_deletion_vectors_updated": self.num_dvs_updated,
        }

    def cleanup(self) -> None:
        """Delete the files this outcome wrote (after a failure; never once committed)."""
        for path in self.written_paths:
            delete_quietly(path)


def deletion_vectors_allowed(snapshot: Snapshot) -> bool:
    """Whether DML may write DVs: the property is on and the protocol has the feature."""
    return properties.deletion_vectors_enabled(snapshot.configuration) and (
        "deletionVectors" in features.writer_features(snapshot.protocol)
    )


def mark_rows_deleted(
    ctx: RunContext,
    snapshot: Snapshot,
    matched: DataFrame,
    *,
    candidates: Sequence[AddFile] | None = None,
    max_rows: int | None = None,
) -> DeletionOutcome:
    """Delete the rows ``matched`` names from the table as of ``snapshot``.

    Args:
        ctx: The statement's context (its Spark session).
        snapshot: The snapshot the rows were read from (with staged writes, if any).
        matched: The hidden file (AddFile.path as in the log) and row-index columns of a
            scan of ``snapshot`` (named by :func:`~txsql.engine.scan.snapshot_row_ids`,
            ``_file`` / ``_row_index`` unless the table has such columns) per row to
            delete; duplicates are harmless. Evaluated exactly once.
        candidates: The files ``matched`` can name (default: every file of the snapshot);
            passing the scanned files keeps the task closure small.
        max_rows: An upper bound on the rows of ``matched``, if the caller knows one
            (UPDATE: the rows it wrote); else the candidates' ``numRecords`` bound it.

    Returns:
        The actions to stage and Delta's counters. Nothing is staged or committed.

    Raises:
        TxSqlError: If a row names a file outside ``candidates`` (a planner bug).
    """
    file_column, row_column = snapshot_row_ids(snapshot)
    files = list(snapshot.files if candidates is None else candidates)
    if max_rows is None:
        max_rows = total_records(files)
    crcs = crc_paths(files)
    if max_rows is not None and max_rows <= DIRECT_ROWS and crcs is not None:
        collected = _collect_rows(matched, file_column, row_column, crcs)
        return delete_found_rows(ctx, snapshot, collected, candidates=files)
    # ONE Spark job: each scan task groups its matched row indexes per file and returns
    # compact bitmaps. No shuffle by file (with AQE a shuffle is a job of its own); a file
    # split over several tasks just arrives in several pieces, unioned below.
    pieces = count_job(
        lambda: (
            matched.select(quote(file_column), quote(row_column))
            .mapInArrow(_group_task, _FOUND_DDL)
            .collect()
        )
    )
    found: dict[str, BitMap64] = {}
    for piece in pieces:
        rows = BitMap64.deserialize(piece["rows"])
        if piece["path"] in found:
            found[piece["path"]] |= rows
        else:
            found[piece["path"]] = rows
    return delete_found_rows(ctx, snapshot, found, candidates=files)


def crc_paths(files: Sequence[AddFile]) -> dict[int, str] | None:
    """crc32 of each file's log path -> the path; None if two paths share a CRC."""
    crcs = {zlib.crc32(f.path.encode("utf-8")): f.path for f in files}
    return crcs if len(crcs) == len({f.path for f in files}) else None


def file_crc(column: str) -> Column:
    """Spark's crc32 of a file column: the key :func:`bitmaps_by_crc` maps back to paths."""

    return F.crc32(F.col(quote(column)).cast("binary"))


def _collect_rows(
    matched: DataFrame, file_column: str, row_column: str, crcs: dict[int, str]
) -> dict[str, BitMap64]:
    """One Spark job without a Python stage: the pairs as Arrow, grouped on the driver."""

    pairs = matched.select(file_crc(file_column).alias("f"), F.col(quote(row_column)).alias("r"))
    table = count_job(lambda: pairs.toArrow())
    keys = table.column("f").to_numpy(zero_copy_only=False)
    return bitmaps_by_crc(keys, table.column("r").to_numpy(zero_copy_only=False), crcs)


def bitmaps_by_crc(keys: np.ndarray, rows: np.ndarray, crcs: dict[int, str]) -> dict[str, BitMap64]:
    """Row indexes grouped per file: ``keys[i]`` is the crc32 of row ``rows[i]``'s file.

    Raises:
        TxSqlError: If a key is not the CRC of a path in ``crcs`` (a planner bug).
    """
    found: dict[str, BitMap64] = {}
    distinct, codes = np.unique(keys, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for chunk in np.split(order, bounds) if len(order) else []:
        crc = int(distinct[codes[chunk[0]]])
        if crc not in crcs:
            raise TxSqlError(f"row of an unexpected file (crc32 {crc}) marked for deletion")
        found.setdefault(crcs[crc], BitMap64()).update(rows[chunk].astype(np.uint64))
    return found


def delete_found_rows(
    ctx: RunContext,
    snapshot: Snapshot,
    found: dict[str, BitMap64],
    *,
    candidates: Sequence[AddFile] | None = None,
) -> DeletionOutcome:
    """Delete the rows of per-file bitmaps ``found`` (AddFile.path -> physical row
    indexes; rows already deleted are ignored), as :func:`mark_rows_deleted` does for a
    DataFrame. No Spark job unless files must be rewritten (tables without DVs).

    Raises:
        TxSqlError: If a bitmap names a file outside ``candidates`` (a planner bug).
    """
    files = list(snapshot.files if candidates is None else candidates)
    by_path = {f.path: f for f in files}
    dv_ok = deletion_vectors_allowed(snapshot)
    root = snapshot.table_root
    for path in found:
        if path not in by_path:
            raise TxSqlError(f"row of unexpected file {path!r} marked for deletion")
    outcome = DeletionOutcome()
    now = int(time.time() * 1000)
    rewrite: list[tuple[AddFile, BitMap64]] = []
    to_write: list[tuple[AddFile, BitMap64]] = []
    fs = file_io_for(root)
    for path in sorted(found):
        add = by_path[path]
        total = num_records(add.stats)
        old = BitMap64()
        if add.deletion_vector is not None:
            old = read_deletion_vector(add.deletion_vector, root, fs)
        # Scans for DML may include rows an earlier DV deleted; they are not matches.
        fresh = found[path] - old
        if not fresh:
            continue  # only rows already deleted: nothing changes in this file
        union = old | fresh
        if total is not None and union.max() >= total:
            raise TxSqlError(
                f"row index {union.max()} is beyond the {total} rows of {path}",
                hint="The file's stats disagree with its data; the table is unchanged.",
            )
        outcome.touched_files.append(add)
        outcome.matched_rows_by_file[path] = fresh
        outcome.num_deleted_rows += len(fresh)
        if total is not None and len(union) >= total:
            _count_removed(outcome, add)
            outcome.actions.append(add.to_remove(timestamp=now))
        elif dv_ok and total is not None:
            to_write.append((add, union))
        else:
            rewrite.append((add, fresh))
    # All new DVs of the statement go into ONE file, written here on the driver: the
    # bitmaps are already here (the read set needs them), and it saves a second job.
    descriptors = write_deletion_vectors(root, fs, [union for _, union in to_write])
    for (add, _), new_dv in zip(to_write, descriptors):
        dv_path = new_dv.absolute_path(root)
        if dv_path is not None and dv_path not in outcome.written_paths:
            outcome.written_paths.append(dv_path)
        updated = replace(
            add, deletion_vector=new_dv, stats=loosen_stats(add.stats), data_change=True
        )
        outcome.actions += [add.to_remove(timestamp=now), updated]
        if add.deletion_vector is None:
            outcome.num_dvs_added += 1
        else:
            outcome.num_dvs_updated += 1
    if rewrite:
        _copy_on_write(ctx, snapshot, rewrite, outcome, now)
    return outcome


def _count_removed(outcome: DeletionOutcome, add: AddFile) -> None:
    outcome.num_removed_files += 1
    outcome.num_removed_bytes += add.size
    if add.deletion_vector is not None:
        outcome.num_dvs_removed += 1


def _copy_on_write(
    ctx: RunContext,
    snapshot: Snapshot,
    rewrite: list[tuple[AddFile, BitMap64]],
    outcome: DeletionOutcome,
    now: int,
) -> None:
    """Rewrite files without their newly deleted rows (bitmaps expanded on executors)."""

    started = time.perf_counter()
    spark = ctx.spark
    files = tuple(add for add, _ in rewrite)
    bitmaps = pa.table(
        {"p": [add.path for add, _ in rewrite], "b": [rows.serialize() for _, rows in rewrite]}
    )
    # Copies keep their stable row ids and commit versions (row tracking).
    subset = replace(snapshot, files=files)
    scan = scan_snapshot(spark, subset, with_row_ids=True, with_lineage=True)
    file_column, row_column = snapshot_row_ids(snapshot)
    del_path, del_row = fresh_names([_DEL_PATH, _DEL_ROW], scan.columns)
    deleted = spark.createDataFrame(bitmaps).mapInArrow(
        _expand_task(del_path, del_row), f"{quote(del_path)} string, {quote(del_row)} bigint"
    )
    condition = (scan[quote(file_column)] == deleted[quote(del_path)]) & (
        scan[quote(row_column)] == deleted[quote(del_row)]
    )
    kept = scan.join(deleted, condition, "left_anti").drop(file_column, row_column)
    # Copies of committed rows: the column rules held when they were written.
    adds = count_job(
        lambda: write_data_files(
            spark,
            kept,
            snapshot.table_root,
            snapshot.metadata,
            enforce=False,
            protocol=snapshot.protocol,
        )
    )
    outcome.written_paths += [resolve_path(snapshot.table_root, a.path) for a in adds]
    for add in files:
        _count_removed(outcome, add)
        outcome.actions.append(add.to_remove(timestamp=now))
    outcome.actions += adds
    outcome.num_added_files += len(adds)
    outcome.num_added_bytes += sum(a.size for a in adds)
    outcome.num_copied_rows += sum(num_records(a.stats) or 0 for a in adds)
    outcome.rewrite_time_ms += int((time.perf_counter() - started) * 1000)


def _expand_task(
    path_name: str, row_name: str
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executor side: (path, serialized bitmap) -> one (path, row index) row per row."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            cols = batch.to_pydict()
            for path, data in zip(cols["p"], cols["b"]):
                rows = np.asarray(BitMap64.deserialize(data).to_array(), dtype=np.int64)
                paths = pa.array([path] * len(rows), pa.string())
                yield pa.RecordBatch.from_arrays(
                    [paths, pa.array(rows)], names=[path_name, row_name]
                )

    return run


def _group_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: (file, row index) rows -> one (file, serialized bitmap) row per file."""
    found = _group_rows(batches)
    if found:
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(list(found), pa.string()),
                pa.array([rows.serialize() for rows in found.values()], pa.binary()),
            ],
            schema=_FOUND,
        )


def _group_rows(batches: Iterable[pa.RecordBatch]) -> dict[str, BitMap64]:
    """Row indexes per file path, grouped with numpy (no Python loop over rows)."""
    found: dict[str, BitMap64] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        encoded = batch.column(0).dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        rows = batch.column(1).to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        codes, rows = codes[order], rows[order]
        bounds = np.flatnonzero(np.diff(codes)) + 1
        for chunk_codes, chunk_rows in zip(np.split(codes, bounds), np.split(rows, bounds)):
            path = encoded.dictionary[int(chunk_codes[0])].as_py()
            found.setdefault(path, BitMap64()).update(chunk_rows.astype(np.uint64))
    return found
