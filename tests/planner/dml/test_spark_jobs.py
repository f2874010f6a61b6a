"""Spark jobs per DELETE / UPDATE: the reported count against Spark's status tracker.

txsql counts the actions it runs (``spark_jobs`` in ``Result.metrics``) without the JVM;
here, in a test only, Spark's own tracker counts the jobs that really ran in a job group
set around the statement. Rows are checked with DuckDB as the oracle, and the DV-free DML
scan must never resurrect a deleted row.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from tests.planner.dml_helpers import check_against_duckdb
from txsql.planner.dml import live_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DDL = "id BIGINT, v VARCHAR, k INTEGER"
COLUMNS = "id, v, k"
# The scan attaches its per-file constants (``_file``, partition values) and filters few
# deleted rows with literals, no broadcast join: Spark runs no job besides txsql's own.


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _statement_jobs(s: txsql.Session, statement: str) -> tuple[txsql.Result, int]:
    sc: Any = s.spark.sparkContext
    group = f"txsql-jobs-{uuid.uuid4().hex}"  # fresh: job groups accumulate per name
    sc.setJobGroup(group, statement)
    try:
        result = s.sql(statement)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def _create(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id BIGINT, v STRING, k INT)")
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, NULL, 1), (4, 'd', 2)")
    s.sql("INSERT INTO t VALUES (5, 'e', 1), (6, NULL, 2), (7, 'g', 1), (8, 'h', 2)")


@pytest.mark.parametrize(("with_dvs", "udf"), [(False, False), (True, False), (True, True)])
def test_delete_and_update_job_counts(
    s: txsql.Session, with_dvs: bool, udf: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if udf:  # UPDATE drops many deleted rows with a Python UDF in its own tasks
        monkeypatch.setattr(live_rows, "_LITERAL_ROWS", -1)
    _create(s)
    if with_dvs:  # the statements below then scan files that already have DVs
        check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id IN (3, 6)")
    deleted, real = _statement_jobs(s, "DELETE FROM t WHERE id = 5")
    assert deleted.metrics["num_deleted_rows"] == 1
    assert deleted.metrics["spark_jobs"] == 1
    assert real == deleted.metrics["spark_jobs"]
    updated, real = _statement_jobs(s, "UPDATE t SET v = concat(v, '!') WHERE k = 1")
    # k = 1: ids 1, 3, 5, 7; 5 is gone, and 3 too when the first DELETE ran.
    assert updated.metrics["num_updated_rows"] == (2 if with_dvs else 3)
    # One job: the write observes which rows it replaces (planner/dml/few_rows.py).
    assert updated.metrics["spark_jobs"] == 1
    assert real == updated.metrics["spark_jobs"]
    rows = sorted(tuple(r) for r in s.sql(f"SELECT {COLUMNS} FROM t").df.collect())
    expected: list[tuple[int, str | None, int]]
    expected = [(1, "a!", 1), (2, "b", 2), (4, "d", 2), (7, "g!", 1), (8, "h", 2)]
    if not with_dvs:
        expected += [(3, None, 1), (6, None, 2)]
    assert rows == sorted(expected, key=lambda r: r[0])


def test_update_after_deletes_matches_duckdb(s: txsql.Session) -> None:
    """Rows deleted by earlier DVs match the WHERE clause but must not come back."""
    _create(s)
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id % 2 = 1")
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET k = k + 10 WHERE v IS NULL OR id > 0")
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE k = 12")
    result = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'z' WHERE true")
    assert result.metrics["num_updated_rows"] == 0


def test_explain_announces_the_jobs_the_statement_reports(s: txsql.Session) -> None:
    _create(s)
    for statement in ("DELETE FROM t WHERE id = 2", "UPDATE t SET k = 0 WHERE id > 6"):
        plan = s.sql(f"EXPLAIN {statement}")
        line = next(x for x in plan.message.splitlines() if x.startswith("spark jobs"))
        assert line.split()[-1] == str(plan.metrics["spark_jobs"])
        assert s.sql(statement).metrics["spark_jobs"] == plan.metrics["spark_jobs"]
    pruned = "DELETE FROM t WHERE k > 100"  # stats skip every file: no job at all
    assert s.sql(f"EXPLAIN {pruned}").metrics["spark_jobs"] == 0
    assert s.sql(pruned).metrics["spark_jobs"] == 0


# Besides its own actions a MERGE makes Spark run broadcast exchanges (the source, the
# split join's matched ids, the scan's per-file constants, the target's deleted-row
# buckets) and, under AQE, one job per cached relation it reads before the action proper:
# 8 jobs in all on Spark 4.0 for the statement below, 3 of them txsql's actions.
MERGE_EXTRA_JOBS = 5


def test_merge_job_count_and_rows(s: txsql.Session) -> None:
    _create(s)
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id = 3")  # files with DVs
    s.spark.createDataFrame(
        [(1, "A", 1), (2, None, 2), (3, "C", 1), (9, "I", 1), (10, "J", 2)],
        "id long, v string, k int",
    ).createOrReplaceTempView("src")
    statement = (
        "MERGE INTO t USING src ON t.id = src.id "
        "WHEN MATCHED AND src.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = src.v "
        "WHEN NOT MATCHED AND src.k = 2 THEN INSERT (id, v, k) VALUES (src.id, 'two', 2) "
        "WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.k = 2 THEN UPDATE SET v = 'gone'"
    )
    plan = s.sql(f"EXPLAIN {statement}")
    merged, real = _statement_jobs(s, statement)
    assert merged.metrics["spark_jobs"] == plan.metrics["spark_jobs"] == 3
    assert real <= merged.metrics["spark_jobs"] + MERGE_EXTRA_JOBS
    # 1 updated, 2 deleted, 3 (deleted before) and 9 inserted, 10 inserted by the k = 2
    # clause, 4/6/8 (k = 2, unmatched) updated.
    rows = sorted(tuple(r) for r in s.sql(f"SELECT {COLUMNS} FROM t").df.collect())
    expected = [
        (1, "A", 1),
        (3, "C", 1),
        (4, "gone", 2),
        (5, "e", 1),
        (6, "gone", 2),
        (7, "g", 1),
        (8, "gone", 2),
        (9, "I", 1),
        (10, "two", 2),
    ]
    assert rows == expected
    assert merged.metrics["num_inserted_rows"] == 3
