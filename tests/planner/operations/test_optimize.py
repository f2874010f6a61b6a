"""OPTIMIZE (bin-packing, WHERE, ZORDER BY) and REORG TABLE ... APPLY (PURGE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, p STRING, v DOUBLE) PARTITIONED BY (p)")
    for i in range(4):  # four small files per partition (one Spark task writes each insert)
        values = (
            f"({i}, 'a', {i}.5), ({i + 10}, 'b', NULL), ({i + 20}, 'a', 1.0), ({i + 30}, 'b', 2.0)"
        )
        s.sql(f"INSERT INTO t SELECT /*+ COALESCE(1) */ * FROM VALUES {values} AS s(id, p, v)")
    return s


def log_of(s: txsql.Session) -> DeltaLog:
    return DeltaLog.for_path(str(Path(s.warehouse) / "t"))


def rows(s: txsql.Session, version: int | None = None) -> list[tuple[Any, ...]]:
    at = f" VERSION AS OF {version}" if version is not None else ""
    return sorted((tuple(r) for r in s.sql(f"SELECT id, p, v FROM t{at}").df.collect()), key=repr)


def by_partition(snapshot: Snapshot) -> dict[str | None, int]:
    counts: dict[str | None, int] = {}
    for f in snapshot.files:
        counts[f.partition_values["p"]] = counts.get(f.partition_values["p"], 0) + 1
    return counts


def test_optimize_compacts_and_drops_deleted_rows(session: txsql.Session) -> None:
    session.sql("DELETE FROM t WHERE id IN (1, 12)")  # DVs on two files
    before, version = rows(session), log_of(session).latest_version()
    assert by_partition(log_of(session).snapshot()) == {"a": 4, "b": 4}
    r = session.sql("OPTIMIZE t")
    snapshot = log_of(session).snapshot()
    assert by_partition(snapshot) == {"a": 1, "b": 1}
    assert all(f.deletion_vector is None and not f.data_change for f in snapshot.files)
    assert rows(session) == before
    assert sum(json.loads(f.stats or "{}")["numRecords"] for f in snapshot.files) == len(before)
    assert r.metrics["numFilesRemoved"] == 8 and r.metrics["numFilesAdded"] == 2
    assert r.metrics["numDeletionVectorsRemoved"] == 2
    assert r.metrics["partitionsOptimized"] == 2
    assert r.metrics["totalConsideredFiles"] == 8
    info = snapshot.commit_info
    assert info is not None and info.operation == "OPTIMIZE"
    assert info.isolation_level == "SnapshotIsolation"
    parameters = dict(info.operation_parameters or {})
    assert parameters.pop("txsqlRowMap", None), "row map recorded (txn/compaction.py)"
    assert parameters == {"predicate": "[]", "zOrderBy": "[]", "auto": "false"}
    assert (info.operation_metrics or {})["numRemovedFiles"] == "8"
    metrics = r.df.collect()[0]["metrics"]
    assert metrics["filesRemoved"]["totalFiles"] == 8 and metrics["preserveInsertionOrder"]
    # The new version and every old one read the same through txsql and other readers.
    assert version is not None
    for v in range(1, version + 2):
        expected = rows(session, v)
        assert sorted(duckdb_rows(snapshot.table_root, v, "id, p, v"), key=repr) == expected
        assert sorted(deltalake_rows(snapshot.table_root, v, "id, p, v"), key=repr) == expected
    # Nothing left to compact: no new commit.
    again = session.sql("OPTIMIZE t")
    assert again.version == version + 1 and log_of(session).latest_version() == version + 1


def test_optimize_respects_target_size(session: txsql.Session) -> None:
    size = max(f.size for f in log_of(session).snapshot().files)
    session.sql(f"ALTER TABLE t SET TBLPROPERTIES ('delta.targetFileSize' = '{2 * size + 1}')")
    session.sql("OPTIMIZE t")
    counts = by_partition(log_of(session).snapshot())
    assert counts == {"a": 2, "b": 2}  # bins of two files each


def test_optimize_where_touches_only_that_partition(session: txsql.Session) -> None:
    before = log_of(session).snapshot()
    untouched = {f.path for f in before.files if f.partition_values["p"] == "b"}
    r = session.sql("OPTIMIZE t WHERE p = 'a'")
    after = log_of(session).snapshot()
    assert by_partition(after) == {"a": 1, "b": 4}
    assert untouched <= {f.path for f in after.files}
    assert rows(session) == rows(session, before.version)
    assert r.metrics["totalConsideredFiles"] == 4
    info = after.commit_info
    assert info is not None and json.loads((info.operation_parameters or {})["predicate"]) == [
        "p = 'a'"
    ]
    with pytest.raises(SchemaError, match="partition columns"):
        session.sql("OPTIMIZE t WHERE id > 1")


def test_zorder_sorts_rows_by_interleaved_ranks(session: txsql.Session, spark: Any) -> None:
    session.sql("CREATE TABLE z (x INT, y INT)")
    session.sql("INSERT INTO z SELECT id % 8, (id * 5) % 8 FROM range(64)")
    session.sql("INSERT INTO z VALUES (0, 0)")
    before = sorted(tuple(r) for r in session.sql("SELECT * FROM z").df.collect())
    r = session.sql("OPTIMIZE z ZORDER BY (x, y)")
    assert r.metrics["numFilesAdded"] == 1
    snapshot = DeltaLog.for_path(str(Path(session.warehouse) / "z")).snapshot()
    path = str(Path(snapshot.table_root) / snapshot.files[0].path)
    physical = [tuple(r) for r in spark.read.parquet(path).collect()]
    assert sorted(physical) == before

    def morton(x: int, y: int) -> int:
        return sum(((x >> b) & 1) << (2 * b) | ((y >> b) & 1) << (2 * b + 1) for b in range(3))

    keys = [morton(x, y) for x, y in physical]
    assert keys == sorted(keys)  # file order follows the Z curve
    info = snapshot.commit_info
    assert info is not None and (info.operation_parameters or {})["zOrderBy"] == '["x", "y"]'
    with pytest.raises(SchemaError):
        session.sql("OPTIMIZE t ZORDER BY (p)")


def test_reorg_purge_rewrites_only_files_with_deletion_vectors(session: txsql.Session) -> None:
    session.sql("DELETE FROM t WHERE id = 2")
    snapshot = log_of(session).snapshot()
    with_dv = [f for f in snapshot.files if f.deletion_vector is not None]
    assert len(with_dv) == 1
    before = rows(session)
    r = session.sql("REORG TABLE t APPLY (PURGE)")
    after = log_of(session).snapshot()
    assert all(f.deletion_vector is None for f in after.files)
    assert len(after.files) == len(snapshot.files)
    assert with_dv[0].path not in {f.path for f in after.files}
    assert rows(session) == before
    assert r.metrics["numDeletionVectorsRemoved"] == 1
    info = after.commit_info
    assert info is not None and info.operation == "REORG"
    assert (info.operation_parameters or {})["applyPurge"] == "true"
    assert duckdb_rows(after.table_root, after.version, "id, p, v") == sorted(before)
