"""EXPLAIN: the predicate split, files scanned vs skipped, and the plan; nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
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


@pytest.mark.parametrize("deleted_rows", ["none", "literal", "python_udf"])
def test_dml_scans_push_the_where_clause_into_the_parquet_reader(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch, deleted_rows: str
) -> None:
    """With the row index in the scan and earlier DVs filtered after the WHERE clause, the
    WHERE clause still reaches the Parquet reader (which skips row groups and pages by
    their statistics): EXPLAIN shows it, and it is in Spark's physical plan of the very
    scan the DELETE and the UPDATE run."""
    import pyarrow.parquet as pq

    from txsql.engine.scan import pushed_filters
    from txsql.planner.dml import live_rows
    from txsql.planner.operations import delete, update

    s.sql("CREATE TABLE big (id BIGINT, v STRING)")
    s.spark.conf.set("parquet.block.size", "2048")  # row groups of ~100 rows
    try:
        s.sql(
            "INSERT INTO big SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(3000)"
        )
    finally:
        s.spark.conf.unset("parquet.block.size")
    (data,) = s.table("big").snapshot().files
    assert pq.ParquetFile(f"{s.table('big').location}/{data.path}").num_row_groups > 5
    if deleted_rows != "none":
        s.sql("DELETE FROM big WHERE id % 100 = 7")  # 30 rows in a DV
    if deleted_rows == "python_udf":
        monkeypatch.setattr(live_rows, "_LITERAL_ROWS", -1)
    for statement in ("DELETE FROM big WHERE id = 2500", "UPDATE big SET v = 'x' WHERE id = 2501"):
        explained = dict(tuple(r) for r in s.sql(f"EXPLAIN {statement}").df.collect())
        assert "EqualTo(id," in explained["pushed filters"], statement
    scans: list[Any] = []

    def spy(function: Any, position: int) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            scans.append(args[position])
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(delete, "collect_found_rows", spy(delete.collect_found_rows, 1))
    monkeypatch.setattr(update, "write_data_files", spy(update.write_data_files, 1))
    assert s.sql("DELETE FROM big WHERE id = 2500").metrics["num_deleted_rows"] == 1
    assert s.sql("UPDATE big SET v = 'x' WHERE id = 2501").metrics["num_updated_rows"] == 1
    assert len(scans) == 2
    for scan, value in zip(scans, (2500, 2501)):
        assert any(f"EqualTo(id,{value})" in pushed for pushed in pushed_filters(scan))
