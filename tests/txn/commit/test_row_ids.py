"""Row ids on a row-tracking table, assigned at each commit attempt (no Spark).

The oracles share no code with txsql: the ids are checked against the protocol's rules
(consecutive fresh ranges above the high-water mark, never handed out twice), DuckDB's
delta extension reads every version, and pyarrow reads the checkpoint txsql wrote.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.interop.readers import duckdb_rows
from txsql.errors import TransactionError
from txsql.log import row_tracking
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
TRACKED = Protocol(1, 7, None, ("domainMetadata", "rowTracking"))


def _create(root: Path, **conf: str) -> DeltaLog:
    log = DeltaLog.for_path(str(root))
    configuration = {row_tracking.ENABLE_PROPERTY: "true", **conf}
    with Transaction(log) as txn:
        txn.stage([TRACKED, Metadata(id="rt", schema_string=SCHEMA, configuration=configuration)])
        txn.commit("CREATE TABLE")
    return log


def _file(log: DeltaLog, ids: range) -> AddFile:
    name = f"part-{ids.start}-{ids.stop}.parquet"
    path = Path(log.table_root) / name
    pq.write_table(pa.table({"id": pa.array(list(ids), pa.int64())}), path)
    stats = json.dumps({"numRecords": len(ids)})
    return AddFile(name, {}, path.stat().st_size, 0, stats=stats)


def _append(log: DeltaLog, *files: range) -> Transaction:
    txn = Transaction(log)
    txn.snapshot()
    txn.stage([_file(log, ids) for ids in files])
    return txn


def _ranges(snapshot: Snapshot) -> list[tuple[int, int]]:
    """Every live file's fresh row ids as (first, last)."""
    out = []
    for f in snapshot.files:
        count = json.loads(f.stats or "{}")["numRecords"]
        assert f.base_row_id is not None and f.default_row_commit_version is not None
        out.append((f.base_row_id, f.base_row_id + count - 1))
    return sorted(out)


def _mark(snapshot: Snapshot) -> int:
    return row_tracking.high_water_mark(snapshot.domains.values())


def test_new_files_get_consecutive_ids_above_the_mark(tmp_path: Path) -> None:
    log = _create(tmp_path / "t")
    _append(log, range(3), range(3, 8)).commit("WRITE")
    _append(log, range(8, 10)).commit("WRITE")
    snapshot = log.snapshot()
    assert _ranges(snapshot) == [(0, 2), (3, 7), (8, 9)]
    assert _mark(snapshot) == 9
    versions = {f.path: f.default_row_commit_version for f in snapshot.files}
    assert versions == {
        "part-0-3.parquet": 1,
        "part-3-8.parquet": 1,
        "part-8-10.parquet": 2,
    }
    info = log.read_commit(2)[0]
    assert info.extra is not None and info.extra["tags"][row_tracking.PRESERVED_TAG] == "true"
    assert duckdb_rows(log.table_root, 2, "id") == [(i,) for i in range(10)]


def test_a_file_committed_again_keeps_its_ids(tmp_path: Path) -> None:
    log = _create(tmp_path / "t")
    _append(log, range(4)).commit("WRITE")
    (live,) = log.snapshot().files
    with Transaction(log) as txn:
        txn.snapshot()
        # A recommit (as a DV update does): remove and add the same path, fields copied.
        txn.stage([live.to_remove(data_change=False), live])
        txn.commit("OPTIMIZE")
    (again,) = log.snapshot().files
    assert (again.base_row_id, again.default_row_commit_version) == (0, 1)
    assert _mark(log.snapshot()) == 3


@pytest.mark.parametrize("round_number", range(20))
def test_racing_writers_never_share_ids(tmp_path: Path, round_number: int) -> None:
    """Two appends read the same version; the loser assigns above the winner's mark."""
    log = _create(tmp_path / "t")
    first = _append(log, range(3))
    second = _append(log, range(100, 100 + 2 + round_number % 5))
    winner, loser = (first, second) if round_number % 2 else (second, first)
    winner.commit("WRITE")
    result = loser.commit("WRITE")
    assert result.winners == (1,)
    snapshot = log.snapshot()
    ranges = _ranges(snapshot)
    assert ranges[0][0] == 0 and ranges[1][0] == ranges[0][1] + 1  # disjoint, no gap
    assert _mark(snapshot) == ranges[1][1]
    assert {f.default_row_commit_version for f in snapshot.files} == {1, 2}
    # The serial replay: both appends' rows, whoever won.
    expected = sorted([(i,) for i in range(3)] + [(i,) for i in range(100, 102 + round_number % 5)])
    assert duckdb_rows(log.table_root, 2, "id") == expected


def test_a_checkpoint_keeps_ids_and_the_mark(tmp_path: Path) -> None:
    log = _create(tmp_path / "t", **{"delta.checkpointInterval": "2"})
    _append(log, range(3)).commit("WRITE")
    _append(log, range(3, 5)).commit("WRITE")  # version 2: a checkpoint
    table = pq.read_table(Path(log.store.log_dir) / f"{2:020d}.checkpoint.parquet")
    adds = [a for a in table.column("add").to_pylist() if a is not None]
    assert sorted((a["baseRowId"], a["defaultRowCommitVersion"]) for a in adds) == [(0, 1), (3, 2)]
    domains = [d for d in table.column("domainMetadata").to_pylist() if d is not None]
    assert [json.loads(d["configuration"]) for d in domains] == [{"rowIdHighWaterMark": 4}]
    DeltaLog.for_path(log.table_root)  # a fresh reader starts from the checkpoint
    assert _mark(DeltaLog.for_path(log.table_root).snapshot()) == 4


def test_suspended_tracking_assigns_nothing(tmp_path: Path) -> None:
    log = _create(
        tmp_path / "t",
        **{row_tracking.ENABLE_PROPERTY: "false", row_tracking.SUSPENDED_PROPERTY: "true"},
    )
    _append(log, range(3)).commit("WRITE")
    (f,) = log.snapshot().files
    assert f.base_row_id is None and log.snapshot().domains == {}


def test_enabling_names_the_hidden_columns_once_and_backfills_untracked_files() -> None:
    untracked = AddFile("old.parquet", {}, 1, 0)
    assert row_tracking.backfill([untracked]) == [replace(untracked, data_change=False)]
    named = row_tracking.with_column_names({}, {row_tracking.ENABLE_PROPERTY: "true"})
    assert named[row_tracking.ROW_ID_COLUMN_PROPERTY].startswith("_row-id-col-")
    kept = {row_tracking.ENABLE_PROPERTY: "true", row_tracking.ROW_ID_COLUMN_PROPERTY: "x"}
    assert row_tracking.with_column_names({}, kept)[row_tracking.ROW_ID_COLUMN_PROPERTY] == "x"


def test_a_new_file_without_a_row_count_is_refused(tmp_path: Path) -> None:
    log = _create(tmp_path / "t")
    txn = Transaction(log)
    txn.snapshot()
    add = _file(log, range(2))
    txn.stage([AddFile(add.path, {}, add.size, 0)])
    with pytest.raises(TransactionError, match="numRecords"):
        txn.commit("WRITE")
    assert log.latest_version() == 0
