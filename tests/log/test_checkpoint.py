"""Checkpoint write/read round trips, the exact Parquet schema, V2 and multi-part reads."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.log.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from txsql.log.checkpoint import checkpoint_table, should_checkpoint, write_checkpoint
from txsql.log.checkpoint_read import read_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.replay import ReplayState, load_snapshot
from txsql.log.segment import CheckpointRef, find_segment
from txsql.log.snapshot import Snapshot
from txsql.storage import LocalFileIO, LogStore, MemoryFileIO

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        ],
    }
)
DV = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 2, 1)
NOW = int(time.time() * 1000)


def _by_key(files: tuple[AddFile, ...]) -> dict[tuple[str, str | None], AddFile]:
    return {f.key: f for f in files}


def _table(store: LogStore) -> Snapshot:
    """A partitioned DV table with a txn, domains, a fresh and an expired tombstone."""
    meta = Metadata("m", SCHEMA, ("part", "day"), {"delta.enableDeletionVectors": "true"})
    commits: list[list[Action]] = [
        [
            CommitInfo(timestamp=1, operation="CREATE TABLE"),
            Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "domainMetadata")),
            meta,
            AddFile("part=1/day=2024-01-02/a.parquet", {"part": "1", "day": "2024-01-02"}, 10, 5,
                    stats='{"numRecords":5}', tags={"INSERTION_TIME": "1"}),
            AddFile("part=2/day=__HIVE_DEFAULT_PARTITION__/b.parquet", {"part": "2", "day": None},
                    20, 6, stats='{"numRecords":7}'),
            AddFile("old.parquet", {"part": "", "day": None}, 1, 1),
            SetTransaction("stream", 4, 99),
            DomainMetadata("keep", '{"a":1}'),
            DomainMetadata("gone", "{}"),
        ],
        [
            RemoveFile("part=1/day=2024-01-02/a.parquet", NOW, True, True,
                       {"part": "1", "day": "2024-01-02"}, 10, stats='{"numRecords":5}'),
            AddFile("part=1/day=2024-01-02/a.parquet", {"part": "1", "day": "2024-01-02"}, 10, 5,
                    stats='{"numRecords":5}', deletion_vector=DV, base_row_id=0,
                    default_row_commit_version=0),
            RemoveFile("old.parquet", 1_000, True),  # deleted long ago: expired tombstone
            DomainMetadata("gone", "{}", removed=True),
        ],
    ]  # fmt: skip
    for v, actions in enumerate(commits):
        store.write_if_absent(v, encode_commit(actions))
    return load_snapshot(store, find_segment(store))


def test_round_trip_equals_replayed_state() -> None:
    store = LogStore("/t", MemoryFileIO())
    snap = _table(store)
    info = write_checkpoint(store, snap)
    ref = CheckpointRef(1, "checkpoint", (f"{1:020d}.checkpoint.parquet",))
    state = ReplayState()
    state.apply(read_checkpoint(store, ref.files))
    back = state.snapshot("/t", 1)
    assert _by_key(back.files) == _by_key(snap.files)  # dataclass equality, field by field
    assert back.protocol == snap.protocol and back.metadata == snap.metadata
    assert back.transactions == snap.transactions and back.app_versions == {"stream": 4}
    assert back.domains == snap.domains == {"keep": DomainMetadata("keep", '{"a":1}')}
    # the expired tombstone is dropped; the fresh one survives (without stats)
    assert [r.path for r in back.tombstones] == ["part=1/day=2024-01-02/a.parquet"]
    assert back.tombstones[0].stats is None and back.tombstones[0].size == 10
    hint = json.loads(store.read_log_file("_last_checkpoint"))
    assert hint == {"version": 1, "size": info.size, "sizeInBytes": info.size_in_bytes,
                    "numOfAddFiles": 2}  # fmt: skip
    # protocol + metadata + txn + 1 domain + 2 adds + 1 tombstone
    assert info.size == 7


def test_cold_load_after_checkpoint_matches() -> None:
    store = LogStore("/t", MemoryFileIO())
    snap = _table(store)
    write_checkpoint(store, snap)
    store.delete_log_file(f"{0:020d}.json")  # only the checkpoint can rebuild the state now
    seg = find_segment(store)
    assert seg.checkpoint is not None
    again = load_snapshot(store, seg)
    assert _by_key(again.files) == _by_key(snap.files) and again.domains == snap.domains


def test_checkpoint_has_delta_column_names_and_types(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    write_checkpoint(store, _table(store))
    schema = pq.read_schema(tmp_path / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    assert schema.names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    smap = pa.map_(pa.string(), pa.string())
    dv = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()),
                    ("offset", pa.int32()), ("sizeInBytes", pa.int32()),
                    ("cardinality", pa.int64()), ("maxRowIndex", pa.int64())])  # fmt: skip
    add = schema.field("add").type
    assert [f.name for f in add] == [
        "path", "partitionValues", "size", "modificationTime", "dataChange", "tags",
        "deletionVector", "baseRowId", "defaultRowCommitVersion", "stats",
        "partitionValues_parsed",
    ]  # fmt: skip
    assert add.field("partitionValues").type == smap and add.field("deletionVector").type == dv
    assert add.field("partitionValues_parsed").type == pa.struct(
        [("part", pa.int32()), ("day", pa.date32())]
    )
    remove = schema.field("remove").type
    assert [f.name for f in remove] == [
        "path", "deletionTimestamp", "dataChange", "extendedFileMetadata", "partitionValues",
        "size", "deletionVector", "baseRowId", "defaultRowCommitVersion",
    ]  # fmt: skip
    proto = schema.field("protocol").type
    assert proto.field("minReaderVersion").type == pa.int32()
    assert proto.field("readerFeatures").type == pa.list_(pa.string())
    assert schema.field("txn").type.field("version").type == pa.int64()
    meta = schema.field("metaData").type
    assert [f.name for f in meta] == [
        "id", "name", "description", "format", "schemaString", "partitionColumns",
        "configuration", "createdTime",
    ]  # fmt: skip
    table = pq.read_table(tmp_path / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    parsed = [r["partitionValues_parsed"] for r in table.column("add").to_pylist() if r]
    assert {"part": 2, "day": None} in parsed
    assert "commitInfo" not in table.column_names


def test_checkpoint_table_rows_have_one_action_each() -> None:
    store = LogStore("/t", MemoryFileIO())
    table = checkpoint_table(_table(store), now_ms=NOW)
    non_null = [sum(col[i].is_valid for col in table.columns) for i in range(table.num_rows)]
    assert non_null == [1] * table.num_rows


def test_tombstone_retention_follows_table_property() -> None:
    store = LogStore("/t", MemoryFileIO())
    snap = _table(store)
    assert len(checkpoint_table(snap, now_ms=NOW).column("remove").drop_null()) == 1
    # A week later the fresh tombstone has expired too.
    later = NOW + 8 * 24 * 3600 * 1000
    assert len(checkpoint_table(snap, now_ms=later).column("remove").drop_null()) == 0


def test_should_checkpoint() -> None:
    assert [v for v in range(31) if should_checkpoint(v, {})] == [10, 20, 30]
    assert should_checkpoint(3, {"delta.checkpointInterval": "3"})
    assert not should_checkpoint(0, {"delta.checkpointInterval": "1"})


def test_v2_json_checkpoint_with_parquet_sidecar() -> None:
    store = LogStore("/t", MemoryFileIO())
    snap = _table(store)
    files = checkpoint_table(snap, now_ms=NOW).select(["add", "remove"])
    files = files.filter(pa.compute.is_valid(files.column("add")))
    sink = pa.BufferOutputStream()
    pq.write_table(files, sink)
    store.write_log_file("_sidecars/side-1.parquet", sink.getvalue().to_pybytes())
    body = [
        {"checkpointMetadata": {"version": 1}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["v2Checkpoint"], "writerFeatures": ["v2Checkpoint"]}},
        {"metaData": {"id": "m", "schemaString": SCHEMA, "partitionColumns": ["part", "day"],
                      "configuration": {}, "format": {"provider": "parquet", "options": {}}}},
        {"sidecar": {"path": "side-1.parquet", "sizeInBytes": 1, "modificationTime": 1}},
    ]  # fmt: skip
    name = f"{1:020d}.checkpoint.0b6e58c1-8f3c-4b1e-9d43-2f5f6b9c1e11.json"
    store.write_log_file(name, "\n".join(json.dumps(o) for o in body).encode())
    seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.kind == "v2"
    assert seg.checkpoint.sidecars == ("side-1.parquet",)
    store.delete_log_file(f"{0:020d}.json")
    again = load_snapshot(store, find_segment(store))
    assert _by_key(again.files) == _by_key(snap.files)
    assert again.protocol.reader_features == ("v2Checkpoint",)


def test_fixture_checkpoints_read(fixtures_dir: Path) -> None:
    golden = fixtures_dir / "delta-golden"
    store = LogStore(str(golden / "multi-part-checkpoint"), LocalFileIO())
    seg = find_segment(store)
    assert seg.checkpoint is not None
    actions = read_checkpoint(store, seg.checkpoint.files)
    assert sum(isinstance(a, AddFile) for a in actions) == 10  # numOfAddFiles in the hint
    store = LogStore(str(golden / "dv-partitioned-with-checkpoint"), LocalFileIO())
    ref = CheckpointRef(10, "checkpoint", (f"{10:020d}.checkpoint.parquet",))
    adds = [a for a in read_checkpoint(store, ref.files) if isinstance(a, AddFile)]
    assert adds and all(a.extra is None for a in adds)  # partitionValues_parsed not leaked
    # 50 rows minus the 10 deleted by v10, counted from stats and DV cardinalities
    physical = sum(json.loads(a.stats or "{}")["numRecords"] for a in adds)
    assert physical - sum(a.deletion_vector.cardinality for a in adds if a.deletion_vector) == 40


@pytest.mark.parametrize("table", ["dv-partitioned-with-checkpoint", "dv-with-columnmapping"])
def test_rewriting_fixture_checkpoint_preserves_state(fixture_copy: Any, table: str) -> None:
    root = fixture_copy(f"delta-golden/{table}")
    store = LogStore(str(root), LocalFileIO())
    snap = load_snapshot(store, find_segment(store))
    write_checkpoint(store, snap)
    for v in range(snap.version):
        store.delete_log_file(f"{v:020d}.json")
    again = load_snapshot(store, find_segment(store))
    assert _by_key(again.files) == _by_key(snap.files) and again.num_records == 35
