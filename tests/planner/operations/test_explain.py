"""EXPLAIN: the predicate split, files scanned vs skipped, and the plan; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

import txsql

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: object, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id BIGINT, v STRING, p STRING) PARTITIONED BY (p)")
    session.sql("INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    session.sql("INSERT INTO t VALUES (10, 'd', 'x'), (11, 'e', 'y')")
    return session


def test_explain_delete_shows_split_and_pruning(s: txsql.Session) -> None:
    version = s.table("t").version()
    total = len(s.table("t").snapshot().files)
    result = s.sql("EXPLAIN DELETE FROM t WHERE p = 'x' AND id = 10 AND v LIKE 'd%'")
    assert result.operation == "EXPLAIN" and result.version is None
    steps = dict(tuple(r) for r in result.df.collect())
    assert steps["partition filter"] == "p = 'x'"
    assert steps["data filter (stats)"] == "id = 10"
    assert steps["remaining filter"] == "v LIKE 'd%'"
    m = result.metrics
    assert m["files_total"] == total and m["files_scanned"] == 1
    assert m["files_skipped"] == total - 1
    assert m["files_skipped_by_partition"] >= 1 and m["files_skipped_by_stats"] >= 1
    assert "skipped" in steps and "scanned" in steps and "step 1" in steps
    assert "p = 'x'" in result.message
    assert s.table("t").version() == version  # EXPLAIN never commits


def test_explain_metadata_only_delete_update_and_query(s: txsql.Session) -> None:
    whole = s.sql("EXPLAIN DELETE FROM t WHERE p = 'y'")
    assert whole.metrics["files_removed_whole"] >= 1 and whole.metrics["files_scanned"] == 0
    update = s.sql("EXPLAIN UPDATE t SET v = 'z' WHERE id = 3")
    details = [r[1] for r in update.df.collect()]
    assert any("v = 'z'" in d for d in details)
    assert update.metrics["files_scanned"] == 1
    query = s.sql("EXPLAIN SELECT count(*) FROM t")
    assert any(r[0] == "spark plan" for r in query.df.collect())
