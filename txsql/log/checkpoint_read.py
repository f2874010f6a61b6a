"""Reading checkpoints: classic single-file, multi-part and V2 (with sidecars).

A checkpoint is the reconciled table state at one version: one row per action, one struct
column per action type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import CorruptLogError
from txsql.log.actions import (
    Action,
    AddFile,
    CheckpointMetadata,
    Sidecar,
)
from txsql.log.codec import action_from_checkpoint_row, action_to_checkpoint_row, decode_commit
from txsql.log.stats_json import stats_from_parsed
from txsql.storage.logstore import LogStore
from txsql.storage.paths import SIDECAR_DIR

# Columns a reader needs, in the order actions are replayed (non-file actions first).
ACTION_COLUMNS = (
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
    "add",
    "remove",
)
# Typed duplicates of JSON fields; dropped once ``stats`` has been filled from
# ``stats_parsed`` where only that was written (writeStatsAsJson=false).
_DERIVED = frozenset(("partitionValues_parsed", "stats_parsed"))
# The add fields the columnar fast path converts; any other field takes the per-row codec
# path so nothing unknown is dropped.
_COLUMNAR_ADD_FIELDS = frozenset(
    (
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
        "stats",
    )
)


# --- reading ---------------------------------------------------------------------------


def _parquet_actions(data: bytes, source: str, columns: Iterable[str]) -> list[Action]:
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        present = set(pf.schema_arrow.names)
        wanted = [c for c in columns if c in present]
        table = pf.read(columns=wanted, use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptLogError(f"checkpoint {source} is not readable Parquet: {exc}") from exc
    out: list[Action] = []
    for name in wanted:
        col = table.column(name)
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if arr.null_count == len(arr):
            continue
        arr = arr.filter(pc.is_valid(arr))
        if name == "add" and "stats_parsed" in arr.type.names:
            arr = _with_stats_from_parsed(arr)
        if isinstance(arr.type, pa.StructType) and any(f.name in _DERIVED for f in arr.type):
            keep = [f.name for f in arr.type if f.name not in _DERIVED]
            arr = pa.StructArray.from_arrays([arr.field(k) for k in keep], names=keep)
        if name == "add" and set(arr.type.names) <= _COLUMNAR_ADD_FIELDS:
            out.extend(_adds_columnar(arr))
            continue
        for row in arr.to_pylist():
            action = action_from_checkpoint_row(name, row)
            if action is not None:
                out.append(action)
    return out


def _with_stats_from_parsed(arr: pa.StructArray) -> pa.StructArray:
    """``arr`` (all valid) with ``stats`` built from ``stats_parsed`` where it is missing.

    The JSON string is what the rest of txsql keeps (replay, data skipping, the next
    checkpoint), so a checkpoint carrying only the struct must not lose the stats.
    """
    names = list(arr.type.names)
    stats: list[str | None] = (
        arr.field("stats").to_pylist() if "stats" in names else [None] * len(arr)
    )
    parsed = arr.field("stats_parsed")
    valid = pc.is_valid(parsed).to_pylist()
    missing = [i for i, s in enumerate(stats) if s is None and valid[i]]
    if not missing:
        return arr
    for i, row in zip(missing, parsed.take(missing).to_pylist(), strict=True):
        stats[i] = stats_from_parsed(row)
    children = {n: arr.field(n) for n in names}
    children["stats"] = pa.array(stats, pa.string())  # the derived columns go next
    return pa.StructArray.from_arrays(list(children.values()), names=list(children))


_DV_FIELDS = ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality", "offset")


def _adds_columnar(arr: pa.StructArray) -> list[AddFile]:
    """Decode an all-valid ``add`` column field by field.

    Converting whole child columns and zipping them is several times faster than
    ``to_pylist()`` of the struct plus a per-row decode; it matters for 100k-file tables.
    Only used when every field is one we model, so nothing would land in ``extra``.
    """
    n = len(arr)
    names = set(arr.type.names)

    def col(field: str) -> list[Any]:
        return arr.field(field).to_pylist() if field in names else [None] * n

    pvs = [dict(kv) if kv else {} for kv in col("partitionValues")]
    tags = [None if kv is None else dict(kv) for kv in col("tags")]
    dvs: list[DeletionVectorDescriptor | None] = [None] * n
    if "deletionVector" in names and arr.field("deletionVector").null_count < n:
        dv_arr = arr.field("deletionVector")
        dv_names = set(dv_arr.type.names)
        # flatten() folds the struct's own nulls into the children.
        kids = dict(zip(dv_arr.type.names, dv_arr.flatten(), strict=True))
        dv_cols: list[list[Any]] = [
            kids[f].to_pylist() if f in dv_names else [None] * n for f in _DV_FIELDS
        ]
        st, pth, size, card, off = dv_cols
        dvs = [
            None
            if st[i] is None
            else DeletionVectorDescriptor(st[i], pth[i], size[i], card[i], off[i])
            for i in range(n)
        ]
    data_change = [True if d is None else d for d in col("dataChange")]
    return [
        AddFile(p, pv, sz, mt, dc, stats, tg, dv, base, drcv, cp)
        for p, pv, sz, mt, dc, stats, tg, dv, base, drcv, cp in zip(
            col("path"),
            pvs,
            col("size"),
            col("modificationTime"),
            data_change,
            col("stats"),
            tags,
            dvs,
            col("baseRowId"),
            col("defaultRowCommitVersion"),
            col("clusteringProvider"),
            strict=True,
        )
    ]


def read_checkpoint_file(
    store: LogStore, name: str, columns: Iterable[str] = ACTION_COLUMNS
) -> list[Action]:
    """Decode one checkpoint file (``.parquet`` or V2 ``.json``) in ``_delta_log``."""
    try:
        data = store.read_log_file(name)
    except FileNotFoundError as exc:
        raise CorruptLogError(f"checkpoint file {name} disappeared while reading") from exc
    if name.endswith(".json"):
        wanted = set(columns)
        actions = decode_commit(data, source=name)
        return [a for a in actions if _column_of(a) in wanted]
    return _parquet_actions(data, name, columns)


def _column_of(action: Action) -> str:
    if isinstance(action, CheckpointMetadata):
        return "checkpointMetadata"
    if isinstance(action, Sidecar):
        return "sidecar"
    try:
        return action_to_checkpoint_row(action)[0]
    except ValueError:
        return ""  # commitInfo / cdc never belong in a checkpoint


def read_sidecar_names(store: LogStore, name: str) -> tuple[str, ...]:
    """File names (under ``_delta_log/_sidecars``) a V2 checkpoint references."""
    actions = read_checkpoint_file(store, name, ("sidecar",))
    return tuple(_sidecar_file(a.path) for a in actions if isinstance(a, Sidecar))


def _sidecar_file(path: str) -> str:
    # The protocol stores the name relative to _sidecars; tolerate a full path too.
    return path.rsplit("/", 1)[-1]


def read_checkpoint(store: LogStore, files: Iterable[str]) -> list[Action]:
    """All actions of a checkpoint (its part ``files``), plus the file actions of its sidecars."""
    actions: list[Action] = []
    for name in files:
        actions.extend(read_checkpoint_file(store, name))
    sidecars = [_sidecar_file(a.path) for a in actions if isinstance(a, Sidecar)]
    for side in sidecars:
        actions.extend(read_checkpoint_file(store, f"{SIDECAR_DIR}/{side}", ("add", "remove")))
    return actions
