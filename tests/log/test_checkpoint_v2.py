"""V2 checkpoints written by txsql: UUID-named, checkpointMetadata, sidecars, cleanup.

Oracle: the state replayed from the commits alone (before any checkpoint exists), compared
with the state rebuilt from the checkpoint alone (commits deleted); the Parquet files are
inspected with pyarrow, not with txsql's reader.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow.parquet as pq

from txsql.log.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
)
from txsql.log.checkpoint_v2 import write_v2_checkpoint, writes_uuid_checkpoints
from txsql.log.cleanup import cleanup_expired_logs
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.log.replay import load_snapshot
from txsql.log.segment import find_segment
from txsql.log.snapshot import Snapshot
from txsql.storage import LocalFileIO, LogStore

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
V2 = Protocol(3, 7, ("v2Checkpoint",), ("domainMetadata", "v2Checkpoint"))
DAY_MS = 86_400_000
UUID_NAME = re.compile(r"(\d{20})\.checkpoint\.[0-9a-f-]{36}\.parquet")


def _table(store: LogStore, files: int, policy: str = "v2") -> Snapshot:
    meta = Metadata("m", SCHEMA, configuration={"delta.checkpointPolicy": policy})
    first: list[Action] = [CommitInfo(timestamp=1, operation="CREATE TABLE"), V2, meta]
    first.append(DomainMetadata("com.acme.keep", '{"a":1}'))
    first += [
        AddFile(f"f{i}.parquet", {}, 10 + i, 5, stats='{"numRecords":1}') for i in range(files)
    ]
    store.write_if_absent(0, encode_commit(first))
    # a tombstone that must survive (fresh), and a new file with row-tracking fields
    second: list[Action] = [
        RemoveFile("f0.parquet", 2**62, True, True, {}, 10),
        AddFile("g.parquet", {}, 99, 6, tags={"k": "v"}, base_row_id=7,
                default_row_commit_version=1),
    ]  # fmt: skip
    store.write_if_absent(1, encode_commit(second))
    return load_snapshot(store, find_segment(store))


def _by_path(snapshot: Snapshot) -> dict[str, AddFile]:
    return {f.path: f for f in snapshot.files}


def _rebuilt_from_checkpoint_alone(store: LogStore, tmp_path: Path) -> Snapshot:
    for p in (tmp_path / "_delta_log").glob("*.json"):
        p.unlink()
    return load_snapshot(store, find_segment(store))


def test_small_table_inline_file_actions(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    snapshot = _table(store, files=3)
    assert writes_uuid_checkpoints(snapshot)
    info = write_v2_checkpoint(store, snapshot)
    names = [p.name for p in (tmp_path / "_delta_log").iterdir() if UUID_NAME.fullmatch(p.name)]
    assert len(names) == 1 and names[0].startswith(f"{1:020d}.")
    table = pq.read_table(tmp_path / "_delta_log" / names[0])
    assert [m for m in table.column("checkpointMetadata").to_pylist() if m] == [
        {"version": 1, "tags": None}
    ]
    assert "sidecar" not in table.column_names
    assert not (tmp_path / "_delta_log" / "_sidecars").exists()
    hint = json.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == 1 and "parts" not in hint and hint["numOfAddFiles"] == 3
    assert info.size == table.num_rows
    back = _rebuilt_from_checkpoint_alone(store, tmp_path)
    assert _by_path(back) == _by_path(snapshot) and back.domains == snapshot.domains
    assert [r.path for r in back.tombstones] == ["f0.parquet"]


def test_big_table_moves_every_file_action_to_sidecars(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    snapshot = _table(store, files=6)  # 6 adds + 1 tombstone = 7 file actions
    info = write_v2_checkpoint(store, snapshot, sidecar_min_file_actions=4, sidecar_file_actions=3)
    sidecars = sorted((tmp_path / "_delta_log" / "_sidecars").iterdir())
    assert len(sidecars) == 3  # 3 + 3 + 1
    top_name = next(p for p in (tmp_path / "_delta_log").iterdir() if UUID_NAME.fullmatch(p.name))
    top = pq.read_table(top_name)
    assert not any(top.column("add").to_pylist()) and not any(top.column("remove").to_pylist())
    listed = [s for s in top.column("sidecar").to_pylist() if s]
    assert sorted(s["path"] for s in listed) == [p.name for p in sidecars]
    assert {s["sizeInBytes"] for s in listed} == {p.stat().st_size for p in sidecars}
    in_sidecars = sum(pq.read_table(p).num_rows for p in sidecars)
    assert in_sidecars == 7
    assert set(pq.read_schema(sidecars[0]).names) == {"add", "remove"}
    assert info.size == top.num_rows - len(listed) + in_sidecars + len(listed)
    back = _rebuilt_from_checkpoint_alone(store, tmp_path)
    assert _by_path(back) == _by_path(snapshot)
    assert {f.path: f.base_row_id for f in back.files}["g.parquet"] == 7
    assert [r.path for r in back.tombstones] == ["f0.parquet"]


def test_classic_policy_writes_a_classic_name_with_checkpoint_metadata(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    snapshot = _table(store, files=2, policy="classic")
    assert not writes_uuid_checkpoints(snapshot)
    DeltaLog(store).checkpoint(snapshot)
    table = pq.read_table(tmp_path / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    assert [m["version"] for m in table.column("checkpointMetadata").to_pylist() if m] == [1]


def test_cleanup_deletes_old_unreferenced_sidecars_and_row_orders(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    snapshot = _table(store, files=6)
    write_v2_checkpoint(store, snapshot, sidecar_min_file_actions=1)
    sidecars = tmp_path / "_delta_log" / "_sidecars"
    used = {p.name for p in sidecars.iterdir()}
    (sidecars / "orphan-old.parquet").write_bytes(b"x")
    (sidecars / "orphan-new.parquet").write_bytes(b"x")
    orders = tmp_path / "_txsql_row_orders"  # a sorting compaction's row orders
    orders.mkdir()
    (orders / "old.bin").write_bytes(b"x")
    (orders / "new.bin").write_bytes(b"x")
    cleanup_ms = int((sidecars / "orphan-new.parquet").stat().st_mtime * 1000) + 31 * DAY_MS
    young_s, old_s = (cleanup_ms - 60_000) / 1000, (cleanup_ms - 31 * DAY_MS) / 1000
    os.utime(sidecars / "orphan-new.parquet", (young_s, young_s))
    os.utime(orders / "new.bin", (young_s, young_s))
    os.utime(orders / "old.bin", (old_s, old_s))
    # cleanup only runs past an expired checkpoint: every other file is 31 days old
    for p in (tmp_path / "_delta_log").rglob("*"):
        if p.is_file() and p.name != "orphan-new.parquet":
            os.utime(p, (old_s, old_s))
    deleted = cleanup_expired_logs(DeltaLog(store), now_ms=cleanup_ms)
    assert "_sidecars/orphan-old.parquet" in deleted
    assert {p.name for p in sidecars.iterdir()} == used | {"orphan-new.parquet"}
    assert "_txsql_row_orders/old.bin" in deleted
    assert [p.name for p in orders.iterdir()] == ["new.bin"]
    back = load_snapshot(store, find_segment(store))
    assert _by_path(back) == _by_path(snapshot)
