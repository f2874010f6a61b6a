"""Writing classic single-file checkpoints (reading lives in ``checkpoint_read``).

A checkpoint is the reconciled table state at one version: one row per action, one struct
column per action type. Written checkpoints use exactly the column order and types Delta
Spark writes (PROTOCOL.md "Checkpoint Schema") so DuckDB's delta extension and
``deltalake`` read them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from txsql.errors import CorruptLogError
from txsql.log import properties
from txsql.log.actions import (
    Action,
    AddFile,
    CheckpointMetadata,
    Metadata,
    RemoveFile,
    SetTransaction,
)
from txsql.log.checkpoint_stats import BOUNDED_TYPES, StatsStruct, stats_struct
from txsql.log.codec import action_to_checkpoint_row
from txsql.log.partition_values import parse_partition_value
from txsql.log.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    parse_schema,
    physical_name,
)
from txsql.log.snapshot import Snapshot
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import LogStore
from txsql.storage.paths import LAST_CHECKPOINT, checkpoint_name

# --- partitionValues_parsed ---------------------------------------------------------

# Partition values take every primitive type a bound does, plus booleans and binaries.
_PRIMITIVES: dict[str, pa.DataType] = {
    **BOUNDED_TYPES,
    "boolean": pa.bool_(),
    "binary": pa.binary(),
}

PartitionFields = list[tuple[str, DataType, pa.DataType]]


def _arrow_type(t: DataType) -> pa.DataType:
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, PrimitiveType) and t.name in _PRIMITIVES:
        return _PRIMITIVES[t.name]
    raise CorruptLogError(f"partition column type {t!r} is not supported in checkpoints")


def _partition_fields(metadata: Metadata) -> PartitionFields:
    """(physical name, Delta type, Arrow type) per partition column, in declared order."""
    schema = parse_schema(metadata.schema_string)
    mode = metadata.configuration.get("delta.columnMapping.mode", "none")
    out = []
    for col in metadata.partition_columns:
        fld = schema.field(col)
        # Under column mapping partitionValues (so the parsed struct) use physical names.
        out.append((physical_name(fld, mode), fld.type, _arrow_type(fld.type)))
    return out


def partition_struct_type(metadata: Metadata) -> pa.StructType:
    """The type of ``add.partitionValues_parsed`` for a partitioned table."""
    return pa.struct([(name, arrow) for name, _, arrow in _partition_fields(metadata)])


def parse_partition_values(
    fields: PartitionFields, values: dict[str, str | None]
) -> dict[str, object]:
    """``partitionValues_parsed`` of one add (missing keys are NULL)."""
    return {name: parse_partition_value(values.get(name), t) for name, t, _ in fields}


# --- writing ---------------------------------------------------------------------------

_STR_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
_TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
_REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
_METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
_PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
_DOMAIN = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
_CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])


def _add_type(
    partition_parsed: pa.StructType | None,
    clustering: bool,
    stats_json: bool = True,
    stats_parsed: pa.StructType | None = None,
) -> pa.StructType:
    fields = [
        ("path", pa.string()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("tags", _STR_MAP),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
    if clustering:
        fields.append(("clusteringProvider", pa.string()))
    if stats_json:
        fields.append(("stats", pa.string()))
    if stats_parsed is not None:
        fields.append(("stats_parsed", stats_parsed))
    if partition_parsed is not None and partition_parsed.num_fields:
        fields.append(("partitionValues_parsed", partition_parsed))
    return pa.struct(fields)


def checkpoint_schema(snapshot: Snapshot) -> pa.Schema:
    """The Parquet schema of a classic checkpoint of ``snapshot`` (Delta Spark's order)."""
    clustering = any(f.clustering_provider is not None for f in snapshot.files)
    parsed = partition_struct_type(snapshot.metadata) if snapshot.partition_columns else None
    stats = _stats_struct(snapshot)
    stats_type = None if stats is None else stats.arrow_type
    add = _add_type(parsed, clustering, _stats_as_json(snapshot), stats_type)
    fields = [
        pa.field("txn", _TXN),
        pa.field("add", add),
        pa.field("remove", _REMOVE),
        pa.field("metaData", _METADATA),
        pa.field("protocol", _PROTOCOL),
        pa.field("domainMetadata", _DOMAIN),
    ]
    if _uses_v2_spec(snapshot):
        fields.append(pa.field("checkpointMetadata", _CHECKPOINT_METADATA))
    return pa.schema(fields)


def _stats_as_json(snapshot: Snapshot) -> bool:
    return properties.checkpoint_stats_as_json(snapshot.configuration)


def _stats_struct(snapshot: Snapshot) -> StatsStruct | None:
    """The ``stats_parsed`` layout when ``writeStatsAsStruct`` asks for it."""
    if not properties.checkpoint_stats_as_struct(snapshot.configuration):
        return None
    return stats_struct(snapshot.metadata)


def _uses_v2_spec(snapshot: Snapshot) -> bool:
    # With the v2Checkpoint feature every checkpoint must carry checkpointMetadata.
    return "v2Checkpoint" in (snapshot.protocol.writer_features or ())


def checkpoint_actions(snapshot: Snapshot, now_ms: int | None = None) -> list[Action]:
    """The actions a checkpoint of ``snapshot`` holds (expired tombstones dropped)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    horizon = now_ms - properties.deleted_file_retention_ms(snapshot.configuration)
    txns = snapshot.transactions or {
        app: SetTransaction(app, v) for app, v in snapshot.app_versions.items()
    }
    txn_retention = properties.set_transaction_retention_ms(snapshot.configuration)
    if txn_retention is not None:
        # Expired app ids are dropped like Spark does (only those that record lastUpdated).
        cutoff = now_ms - txn_retention
        txns = {a: t for a, t in txns.items() if t.last_updated is None or t.last_updated >= cutoff}
    actions: list[Action] = [snapshot.protocol, snapshot.metadata]
    if _uses_v2_spec(snapshot):
        actions.append(CheckpointMetadata(snapshot.version))
    actions.extend(txns.values())
    actions.extend(d for d in snapshot.domains.values() if not d.removed)
    actions.extend(snapshot.files)
    # Spark treats a missing deletionTimestamp as 0, i.e. already expired.
    actions.extend(r for r in snapshot.tombstones if (r.deletion_timestamp or 0) > horizon)
    return actions


def _adds_column(
    files: list[AddFile],
    add_type: pa.StructType,
    parsed: PartitionFields | None,
    stats: StatsStruct | None = None,
) -> pa.StructArray:
    """The ``add`` column built child by child (much faster than one dict per row)."""
    dvs = [f.deletion_vector for f in files]
    dv_children = [
        pa.array([d.storage_type if d else None for d in dvs], pa.string()),
        pa.array([d.path_or_inline_dv if d else None for d in dvs], pa.string()),
        pa.array([d.offset if d else None for d in dvs], pa.int32()),
        pa.array([d.size_in_bytes if d else None for d in dvs], pa.int32()),
        pa.array([d.cardinality if d else None for d in dvs], pa.int64()),
        pa.nulls(len(files), pa.int64()),  # maxRowIndex is transient: always null
    ]
    dv_mask = pa.array([d is None for d in dvs], pa.bool_())
    values: dict[str, pa.Array] = {
        "path": pa.array([f.path for f in files], pa.string()),
        "partitionValues": pa.array([f.partition_values for f in files], _STR_MAP),
        "size": pa.array([f.size for f in files], pa.int64()),
        "modificationTime": pa.array([f.modification_time for f in files], pa.int64()),
        "dataChange": pa.array([f.data_change for f in files], pa.bool_()),
        "tags": pa.array([f.tags for f in files], _STR_MAP),
        "deletionVector": pa.StructArray.from_arrays(dv_children, fields=list(_DV), mask=dv_mask),
        "baseRowId": pa.array([f.base_row_id for f in files], pa.int64()),
        "defaultRowCommitVersion": pa.array(
            [f.default_row_commit_version for f in files], pa.int64()
        ),
        "clusteringProvider": pa.array([f.clustering_provider for f in files], pa.string()),
        "stats": pa.array([f.stats for f in files], pa.string()),
    }
    if parsed is not None:
        rows = [parse_partition_values(parsed, f.partition_values) for f in files]
        values["partitionValues_parsed"] = pa.array(
            rows, add_type.field("partitionValues_parsed").type
        )
    if stats is not None:
        values["stats_parsed"] = stats.column([f.stats for f in files])
    return pa.StructArray.from_arrays([values[f.name] for f in add_type], fields=list(add_type))


def checkpoint_table(snapshot: Snapshot, now_ms: int | None = None) -> pa.Table:
    """Build the checkpoint rows of ``snapshot`` as an Arrow table.

    Rows are the non-file actions, then the adds, then the tombstones; each action type is
    one struct column that is null on the other rows.
    """
    schema = checkpoint_schema(snapshot)
    actions = checkpoint_actions(snapshot, now_ms)
    adds = [a for a in actions if isinstance(a, AddFile)]
    others = [a for a in actions if not isinstance(a, (AddFile, RemoveFile))]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    rows: dict[str, list[dict[str, Any] | None]] = {
        n: [None] * (len(others) + len(removes)) for n in schema.names
    }
    for i, action in enumerate([*others, *removes]):
        if isinstance(action, CheckpointMetadata):
            name, row = "checkpointMetadata", {"version": action.version, "tags": action.tags}
        else:
            name, row = action_to_checkpoint_row(action)
        rows[name][i] = row
    add_type = schema.field("add").type
    parsed = (
        _partition_fields(snapshot.metadata) if "partitionValues_parsed" in add_type.names else None
    )
    arrays = []
    for f in schema:
        head = pa.array(rows[f.name][: len(others)], type=f.type)
        tail = pa.array(rows[f.name][len(others) :], type=f.type)
        if f.name == "add":
            middle = _adds_column(adds, add_type, parsed, _stats_struct(snapshot))
        else:
            middle = pa.nulls(len(adds), f.type)
        arrays.append(pa.concat_arrays([head, middle, tail]))
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class CheckpointInfo:
    """What ``_last_checkpoint`` records about a written checkpoint."""

    version: int
    size: int
    size_in_bytes: int
    num_of_add_files: int

    def to_json(self) -> bytes:
        """The ``_last_checkpoint`` body.

        >>> CheckpointInfo(10, 4, 900, 2).to_json()
        b'{"version":10,"size":4,"sizeInBytes":900,"numOfAddFiles":2}'
        """
        body = {
            "version": self.version,
            "size": self.size,
            "sizeInBytes": self.size_in_bytes,
            "numOfAddFiles": self.num_of_add_files,
        }
        return json.dumps(body, separators=(",", ":")).encode()


def write_checkpoint(
    store: LogStore, snapshot: Snapshot, *, now_ms: int | None = None
) -> CheckpointInfo:
    """Write ``%020d.checkpoint.parquet`` for ``snapshot``, then ``_last_checkpoint``.

    Both writes are atomic, durable replaces; the checkpoint goes first so the hint never
    points at a file that does not exist yet. A failed write (disk full) raises
    ``StorageWriteError`` and leaves no partial file; the commit loop only logs it, since
    the table stays readable from its commits.
    """
    table = checkpoint_table(snapshot, now_ms)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    data = sink.getvalue().to_pybytes()
    store.write_log_file(checkpoint_name(snapshot.version), data)
    crash_point("checkpoint_written")
    info = CheckpointInfo(snapshot.version, table.num_rows, len(data), len(snapshot.files))
    store.write_log_file(LAST_CHECKPOINT, info.to_json())
    crash_point("last_checkpoint_written")
    return info


def should_checkpoint(version: int, configuration: dict[str, str]) -> bool:
    """Whether a writer should checkpoint after committing ``version``.

    >>> should_checkpoint(10, {}), should_checkpoint(9, {}), should_checkpoint(0, {})
    (True, False, False)
    >>> should_checkpoint(4, {"delta.checkpointInterval": "2"})
    True
    """
    interval = properties.checkpoint_interval(configuration)
    return version > 0 and interval > 0 and version % interval == 0
