"""Writing V2 checkpoints: UUID-named, with ``checkpointMetadata``, sidecars once big.

A table with the ``v2Checkpoint`` feature and ``delta.checkpointPolicy = 'v2'`` gets
``n.checkpoint.<uuid>.parquet`` checkpoints (PROTOCOL.md "V2 Checkpoint Table Feature").
The top-level file always holds the non-file actions (protocol, metadata, txn, domains,
``checkpointMetadata``). The file actions are either all inline or, once there are more
than :data:`SIDECAR_MIN_FILE_ACTIONS` of them, all in sidecar files under
``_delta_log/_sidecars/`` that the top-level file lists as ``sidecar`` actions, never a mix.

Order of writes: sidecars, then the top-level file, then ``_last_checkpoint``, so nothing
ever points at a file that is not there. A UUID name never collides, so two writers
checkpointing the same version both succeed and either checkpoint serves readers.
"""

from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from txsql.log import properties
from txsql.log.checkpoint import CheckpointInfo, checkpoint_table
from txsql.log.snapshot import Snapshot
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import LogStore
from txsql.storage.paths import LAST_CHECKPOINT, SIDECAR_DIR

SIDECAR_MIN_FILE_ACTIONS = 50_000
"""File actions (adds and kept tombstones) above which they move to sidecars."""
SIDECAR_FILE_ACTIONS = 200_000
"""File actions per sidecar file (Delta Spark splits by size; a row count is simpler)."""

_SIDECAR = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", pa.map_(pa.string(), pa.string())),
    ]
)


def writes_uuid_checkpoints(snapshot: Snapshot) -> bool:
    """Whether ``snapshot``'s table takes V2 UUID-named checkpoints (feature and policy).

    With the feature but ``checkpointPolicy = 'classic'`` the classic-named file carries
    ``checkpointMetadata`` instead (txsql.log.checkpoint), which the protocol also allows.
    """
    if "v2Checkpoint" not in (snapshot.protocol.writer_features or ()):
        return False
    policy = snapshot.configuration.get(properties.P.CHECKPOINT_POLICY, "classic")
    return policy.strip().lower() == "v2"


def uuid_checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.{uuid.uuid4()}.parquet"


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return bytes(sink.getvalue().to_pybytes())


def write_v2_checkpoint(
    store: LogStore,
    snapshot: Snapshot,
    *,
    now_ms: int | None = None,
    sidecar_min_file_actions: int | None = None,
    sidecar_file_actions: int | None = None,
) -> CheckpointInfo:
    """Write a UUID-named V2 checkpoint of ``snapshot`` (with sidecars when big), then
    ``_last_checkpoint``; return what the hint records. The thresholds default to the
    module's constants, read at call time."""
    min_actions = (
        SIDECAR_MIN_FILE_ACTIONS if sidecar_min_file_actions is None else sidecar_min_file_actions
    )
    per_sidecar = SIDECAR_FILE_ACTIONS if sidecar_file_actions is None else sidecar_file_actions
    table = checkpoint_table(snapshot, now_ms)  # non-file rows first, then adds, removes
    is_file = pc.or_(pc.is_valid(table.column("add")), pc.is_valid(table.column("remove")))
    file_rows = pc.sum(pc.cast(is_file, pa.int64())).as_py() or 0
    top = table
    sidecar_count = 0
    if file_rows > min_actions:
        head = table.slice(0, table.num_rows - file_rows)
        files = table.slice(table.num_rows - file_rows).select(["add", "remove"])
        sidecars = []
        for start in range(0, file_rows, per_sidecar):
            data = _parquet(files.slice(start, per_sidecar))
            name = f"{uuid.uuid4()}.parquet"
            store.write_log_file(f"{SIDECAR_DIR}/{name}", data)
            sidecars.append(
                {
                    "path": name,
                    "sizeInBytes": len(data),
                    "modificationTime": int(time.time() * 1000),
                    "tags": None,
                }
            )
        # Keep the add/remove columns (all null) so the top-level schema is the usual one.
        nulls = pa.nulls(head.num_rows, _SIDECAR)
        top = pa.concat_tables(
            [
                head.append_column("sidecar", nulls),
                _sidecar_rows(head.schema, sidecars),
            ]
        )
        sidecar_count = len(sidecars)
    data = _parquet(top)
    name = uuid_checkpoint_name(snapshot.version)
    store.write_log_file(name, data)
    crash_point("checkpoint_written")
    size = table.num_rows + sidecar_count
    info = CheckpointInfo(snapshot.version, size, len(data), len(snapshot.files))
    store.write_log_file(LAST_CHECKPOINT, info.to_json())
    crash_point("last_checkpoint_written")
    return info


def _sidecar_rows(schema: pa.Schema, sidecars: list[dict[str, object]]) -> pa.Table:
    """One row per sidecar: every other action column null."""
    columns = [pa.nulls(len(sidecars), f.type) for f in schema]
    columns.append(pa.array(sidecars, _SIDECAR))
    return pa.Table.from_arrays(columns, schema=schema.append(pa.field("sidecar", _SIDECAR)))
