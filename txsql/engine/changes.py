"""Change data feed I/O: reading a version range's row changes, writing ``_change_data/``.

Reading follows the protocol's rule (PROTOCOL.md "Change Data Files", "Add CDC File";
ARCHITECTURE.md, "Change data feed"): a version with ``cdc`` actions changed exactly the
rows of its change files; any other version's changes are derived from its data-changing
``add``/``remove`` actions. A path removed and re-added in the same version (a
deletion-vector update) changed only the rows its two DVs differ in: rows in the new DV and
not the old one were deleted, the reverse re-inserted.

Writing: DML on a CDF table writes its change rows (table columns + ``_change_type``) as
Parquet under ``_change_data/`` and returns ``cdc`` actions for the same commit.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64
from pyspark.sql import functions as F

from txsql.dv.store import read_deletion_vector
from txsql.engine.change_ids import expose, lineage_of, resolve_inserts, scan_rows
from txsql.engine.scan import resolve_path, scan_snapshot, snapshot_row_ids
from txsql.engine.write import write_data_files
from txsql.errors import ChangeDataFeedError
from txsql.log import properties
from txsql.log.actions import AddCDCFile, AddFile, Metadata, RemoveFile
from txsql.log.deltalog import DeltaLog
from txsql.log.history import commit_timestamps
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import LocalFileIO

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CHANGE_DIR = "_change_data"
INSERT, DELETE = "insert", "delete"
PREIMAGE, POSTIMAGE = "update_preimage", "update_postimage"


def cdf_enabled(snapshot: Snapshot) -> bool:
    """Whether DML on this table must record its changes."""
    return properties.change_data_feed_enabled(snapshot.configuration)


# --- writing ----------------------------------------------------------------------------


@dataclass
class ChangeFiles:
    """``cdc`` actions to stage and the files behind them (deleted if the commit fails)."""

    actions: list[AddCDCFile]
    written_paths: list[str]

    def cleanup(self) -> None:
        for path in self.written_paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


def with_change_type(df: DataFrame, change_type: str) -> DataFrame:
    return df.withColumn(CHANGE_TYPE, F.lit(change_type))


def write_change_files(spark: SparkSession, snapshot: Snapshot, rows: DataFrame) -> ChangeFiles:
    """Write ``rows`` (table columns + ``_change_type``) under ``_change_data/``.

    Partitioned tables get Hive-style directories inside ``_change_data/`` as Delta Spark
    writes them; partition values go into each action, as the protocol asks.
    """

    root = os.path.join(os.path.abspath(snapshot.table_root), CHANGE_DIR)
    # No column rules: the rows are records of changes the data files already passed.
    metadata = _change_metadata(snapshot.metadata)
    adds = write_data_files(spark, rows, root, metadata, enforce=False)
    actions = [
        AddCDCFile(f"{CHANGE_DIR}/{a.path}", dict(a.partition_values), a.size, False) for a in adds
    ]
    return ChangeFiles(actions, [os.path.join(root, resolve_path("", a.path)) for a in adds])


def _change_metadata(metadata: Metadata) -> Metadata:
    """The table's metadata with ``_change_type`` as one more (string) column."""
    schema = json.loads(metadata.schema_string)
    field = {"name": CHANGE_TYPE, "type": "string", "nullable": True, "metadata": {}}
    schema["fields"] = [*schema["fields"], field]
    return replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))


def rows_in_bitmaps(
    spark: SparkSession,
    snapshot: Snapshot,
    marked: Mapping[str, tuple[AddFile, BitMap64]],
    *,
    lineage: bool = False,
) -> DataFrame:
    """The rows at the marked physical positions of each file (DVs not applied).

    ``marked`` maps a file's log path to the file and the row positions wanted. The
    result has the table's columns, then with ``lineage`` on a table tracking rows their
    stable ids and commit versions (see :func:`txsql.engine.change_ids.scan_rows`).
    """
    files = [replace(add, deletion_vector=None) for add, _ in marked.values()]
    scan = scan_snapshot(
        spark, replace(snapshot, files=tuple(files)), with_row_ids=True, with_lineage=lineage
    )
    file_column, row_column = snapshot_row_ids(snapshot)
    wanted = {path: rows.serialize() for path, (_, rows) in marked.items()}
    kept = scan.mapInArrow(_keep_marked(wanted, file_column, row_column), scan.schema)
    return kept.drop(file_column, row_column)


def _keep_marked(
    wanted: dict[str, bytes], file_column: str, row_column: str
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executor side: keep the rows whose (file, row index) a bitmap marks."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        arrays: dict[str, np.ndarray] = {}
        for batch in batches:
            if batch.num_rows == 0:
                continue
            paths = batch.column(file_column).to_numpy(zero_copy_only=False)
            rows = batch.column(row_column).to_numpy(zero_copy_only=False)
            keep = np.zeros(batch.num_rows, dtype=bool)
            for path in set(paths.tolist()):
                if path not in arrays:
                    marked = BitMap64.deserialize(wanted[path]) if path in wanted else BitMap64()
                    arrays[path] = np.asarray(marked.to_array(), dtype=np.int64)
                here = paths == path
                keep |= here & np.isin(rows, arrays[path])
            yield batch.filter(pa.array(keep))

    return run


# --- reading ----------------------------------------------------------------------------


def read_changes(
    spark: SparkSession, log: DeltaLog, start: int, end: int | None = None
) -> DataFrame:
    """The change rows of versions ``start``..``end`` (both inclusive; end: the latest).

    Columns: the table's (as of ``end``), ``_change_type``, ``_commit_version`` (long),
    ``_commit_timestamp`` (timestamp); on a table tracking rows (as of ``end``), then
    ``_row_id`` and ``_row_commit_version`` (:mod:`txsql.engine.change_ids`).

    Raises:
        ChangeDataFeedError: a bad range, or the feed was off at ``start`` or turned off
            inside the range.
    """
    latest = log.latest_version()
    assert latest is not None
    if start < 0:
        raise ChangeDataFeedError(f"the start version {start} of a change read is negative")
    if start > latest:
        raise ChangeDataFeedError(
            f"the start version {start} is after the latest version {latest} of the table "
            "[DELTA_CDC_START_VERSION_AFTER_LATEST]",
            hint=f"Start at version {latest} or earlier.",
        )
    last = latest if end is None else min(end, latest)
    if last < start:
        raise ChangeDataFeedError(
            f"the change range {start}..{end} ends before it starts [DELTA_INVALID_CDC_RANGE]",
            hint="Give the older version first: table_changes('t', older, newer).",
        )
    first = log.snapshot(start)
    if not properties.change_data_feed_enabled(first.configuration):
        raise _not_enabled(start)
    final = first if last == start else log.snapshot(last)
    timestamps = commit_timestamps(log.store, configuration=final.configuration)
    lineage = lineage_of(final)
    pieces = []
    for version in range(start, last + 1):
        actions = log.read_commit(version)
        for action in actions:
            if isinstance(action, Metadata) and not properties.change_data_feed_enabled(
                action.configuration
            ):
                raise _not_enabled(version)
        piece = version_changes(spark, final, actions, lineage=lineage is not None)
        if piece is not None:
            stamped = _stamp(piece, version, timestamps.get(version, 0))
            pieces.append(expose(stamped, lineage, version))
    if not pieces:
        return empty_changes(spark, final)
    return reduce(lambda a, b: a.unionByName(b), pieces)


def _not_enabled(version: int) -> ChangeDataFeedError:
    return ChangeDataFeedError(
        f"change data feed was not enabled for version {version} [DELTA_MISSING_CHANGE_DATA]"
    )


def version_changes(
    spark: SparkSession, snapshot: Snapshot, actions: Sequence[object], *, lineage: bool = False
) -> DataFrame | None:
    """The change rows (with ``_change_type``) of one commit's actions; None: no changes.

    With ``lineage`` on a table tracking rows, each row also carries its stable id and
    commit version in the table's materialized columns (:mod:`txsql.engine.change_ids`).
    """
    cdc = [a for a in actions if isinstance(a, AddCDCFile)]
    if cdc:
        files = tuple(AddFile(c.path, dict(c.partition_values), c.size, 0) for c in cdc)
        scanned = replace(snapshot, metadata=_change_metadata(snapshot.metadata), files=files)
        rows = scan_rows(spark, scanned, lineage=lineage)
        if not lineage or lineage_of(snapshot) is None:
            return rows
        return resolve_inserts(spark, snapshot, rows, actions, CHANGE_TYPE, INSERT)
    adds = {a.path: a for a in actions if isinstance(a, AddFile) and a.data_change}
    removes = {r.path: r for r in actions if isinstance(r, RemoveFile) and r.data_change}
    inserted = [a for p, a in adds.items() if p not in removes]
    deleted = [_as_add(r) for p, r in removes.items() if p not in adds]
    pieces = []
    if inserted:
        rows = scan_rows(spark, replace(snapshot, files=tuple(inserted)), lineage=lineage)
        pieces.append(with_change_type(rows, INSERT))
    if deleted:
        rows = scan_rows(spark, replace(snapshot, files=tuple(deleted)), lineage=lineage)
        pieces.append(with_change_type(rows, DELETE))
    pieces += _dv_changes(spark, snapshot, adds, removes, lineage)
    return reduce(lambda a, b: a.unionByName(b), pieces) if pieces else None


def _dv_changes(
    spark: SparkSession,
    snapshot: Snapshot,
    adds: dict[str, AddFile],
    removes: dict[str, RemoveFile],
    lineage: bool,
) -> list[DataFrame]:
    """Rows of files removed and re-added in one version: the difference of their DVs."""
    fs = LocalFileIO()
    root = snapshot.table_root
    gone: dict[str, tuple[AddFile, BitMap64]] = {}
    back: dict[str, tuple[AddFile, BitMap64]] = {}
    for path in sorted(set(adds) & set(removes)):
        add, remove = adds[path], removes[path]
        new = BitMap64()
        old = BitMap64()
        if add.deletion_vector is not None:
            new = read_deletion_vector(add.deletion_vector, root, fs)
        if remove.deletion_vector is not None:
            old = read_deletion_vector(remove.deletion_vector, root, fs)
        if new - old:
            gone[path] = (add, new - old)
        if old - new:
            back[path] = (add, old - new)
    pieces = []
    if gone:
        rows = rows_in_bitmaps(spark, snapshot, gone, lineage=lineage)
        pieces.append(with_change_type(rows, DELETE))
    if back:
        rows = rows_in_bitmaps(spark, snapshot, back, lineage=lineage)
        pieces.append(with_change_type(rows, INSERT))
    return pieces


def _as_add(remove: RemoveFile) -> AddFile:
    """A removed file as a scan input (rows its DV had already deleted stay deleted;
    the row tracking fields a remove copies from its add resolve the rows' ids)."""
    return AddFile(
        remove.path,
        dict(remove.partition_values or {}),
        remove.size or 0,
        0,
        stats=remove.stats,
        deletion_vector=remove.deletion_vector,
        base_row_id=remove.base_row_id,
        default_row_commit_version=remove.default_row_commit_version,
    )


def _stamp(df: DataFrame, version: int, timestamp_ms: int) -> DataFrame:
    return df.withColumn(COMMIT_VERSION, F.lit(version).cast("long")).withColumn(
        COMMIT_TIMESTAMP, F.timestamp_millis(F.lit(timestamp_ms))
    )


def empty_changes(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """No change rows, with the columns a change read of ``snapshot`` has."""
    rows = scan_rows(spark, replace(snapshot, files=()), lineage=True)
    return expose(_stamp(with_change_type(rows, INSERT), 0, 0), lineage_of(snapshot), 0).limit(0)
