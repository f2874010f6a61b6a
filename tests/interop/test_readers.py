"""Tables txsql writes are read identically, at every version, by independent readers.

DuckDB's delta extension and deltalake (delta-rs, DataFusion) are the oracles; delta-rs
then appends to the table and txsql must read the result.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap64

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.dv.store import read_deletion_vector, write_deletion_vectors
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction

pytestmark = [pytest.mark.spark, pytest.mark.interop]

COLUMNS = "id, name, amount, p"


def delete_rows_with_dv(log: DeltaLog, rows_by_file: dict[str, list[int]]) -> int:
    """Delete physical rows of data files by writing DVs with txsql's dv writer."""
    with Transaction(log) as txn:
        snapshot = txn.snapshot()
        assert snapshot is not None
        files = {f.path: f for f in snapshot.files}
        bitmaps, targets = [], []
        for path, rows in rows_by_file.items():
            add = files[path]
            bitmap = BitMap64(rows)
            if add.deletion_vector is not None:
                bitmap |= read_deletion_vector(add.deletion_vector, log.table_root, log.store.fs)
            bitmaps.append(bitmap)
            targets.append(add)
        descriptors = write_deletion_vectors(log.table_root, log.store.fs, bitmaps)
        actions: list[Any] = []
        for add, descriptor in zip(targets, descriptors):
            stats = json.loads(add.stats or "{}")
            stats["tightBounds"] = False
            actions.append(add.to_remove())
            actions.append(
                dataclasses.replace(add, deletion_vector=descriptor, stats=json.dumps(stats))
            )
        txn.mark_files_read(list(rows_by_file))
        txn.stage(actions)
        return txn.commit("DELETE", {"predicate": json.dumps(["test"])}).version


def _rows_in(add: Any) -> int:
    return int(json.loads(add.stats)["numRecords"])


def txsql_rows(s: txsql.Session, path: str, version: int) -> list[tuple[Any, ...]]:
    df = s.table(path).to_spark(version=version).selectExpr(*COLUMNS.split(", "))
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_independent_readers_agree_at_every_version(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    path = str(tmp_path / "t")
    by = "PARTITIONED BY (p)" if partitioned else ""
    s.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, amount DOUBLE, p INT) {by}")
    log = DeltaLog.for_path(path)
    dv_versions = []
    first_dv: Any = None
    for i in range(1, 26):
        before = {f.path for f in log.snapshot().files}
        s.sql(
            f"INSERT INTO delta.`{path}` SELECT id, concat('n', id), id * 1.5, CAST(id % 3 AS INT)"
            f" FROM range({i * 10}, {i * 10 + 4}, 1, 1)"  # one task: whole files
        )
        if i in (8, 15, 16, 22):  # DVs, including a second DV on an already-DV'd file
            files = {f.path: f for f in log.snapshot().files}
            # The biggest file this INSERT wrote (a partition's file may hold one row);
            # at 16 the file DV'd at 8 again, on its next row (it has two or more).
            new = [f for p, f in files.items() if p not in before]
            target = max(new, key=lambda f: (_rows_in(f), f.path))
            if i == 16:
                target = files[first_dv]
            first_dv = first_dv or target.path
            already = target.deletion_vector.cardinality if target.deletion_vector else 0
            assert already < _rows_in(target)
            dv_versions.append(delete_rows_with_dv(log, {target.path: [already]}))
    latest = log.latest_version()
    assert latest is not None and latest >= 25 + len(dv_versions)
    names = [f.name for f in log.store.list_log()]
    assert "00000000000000000010.checkpoint.parquet" in names
    assert "00000000000000000020.checkpoint.parquet" in names
    assert any(f.deletion_vector for f in log.snapshot().files)

    for version in range(latest + 1):
        ours = txsql_rows(s, path, version)
        assert duckdb_rows(path, version, COLUMNS) == ours, f"duckdb differs at v{version}"
        assert deltalake_rows(path, version, COLUMNS) == ours, f"deltalake differs at v{version}"
    assert len(txsql_rows(s, path, latest)) == 25 * 4 - len(dv_versions)

    # delta-rs appends; txsql reads its commit.
    from deltalake import write_deltalake

    extra = pa.table(
        {
            "id": pa.array([1000, 1001], pa.int64()),
            "name": ["rs", "rs"],
            "amount": [0.5, 1.5],
            "p": pa.array([1, 2], pa.int32()),
        }
    )
    write_deltalake(path, extra, mode="append")
    after = txsql_rows(s, path, latest + 1)
    assert after == sorted(
        [*txsql_rows(s, path, latest), (1000, "rs", 0.5, 1), (1001, "rs", 1.5, 2)]
    )
    assert s.sql(f"INSERT INTO delta.`{path}` VALUES (2000, 'back', 1.0, 0)").version == latest + 2
    assert duckdb_rows(path, latest + 2, COLUMNS) == txsql_rows(s, path, latest + 2)


def test_checkpoint_written_by_txsql_is_enough_for_other_readers(
    spark: Any, tmp_path: Path
) -> None:
    """Delete commits before the checkpoint: readers must use txsql's checkpoint."""
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE c (id BIGINT, p STRING) PARTITIONED BY (p)")
    for i in range(10):
        s.sql(f"INSERT INTO c VALUES ({i}, 'x{i % 2}')")
    path = s.table("c").location
    for version in range(10):
        (Path(path) / "_delta_log" / f"{version:020d}.json").unlink()
    expected = [(i, f"x{i % 2}") for i in range(10)]
    assert duckdb_rows(path, 10, "id, p") == expected
    assert deltalake_rows(path, 10, "id, p") == expected
    assert sorted(tuple(r) for r in s.table("c").to_spark().collect()) == expected
