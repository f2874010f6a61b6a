"""Matched rows found in the JVM while few: one job, no Python stage, on any file size.

The direct collection's bound used to be the scanned files' row count, so a point DELETE
on big files paid a Python stage. Here the bound ``DIRECT_ROWS`` is made tiny so the test
table's files are "big": a point DELETE or UPDATE must still run one job and no Python
stage; past the bound the statements fall back (a second job) and stay exact. DuckDB is
the oracle and Spark's status tracker counts the jobs.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql.classic.dataframe import DataFrame

import txsql
from tests.planner.dml_helpers import check_against_duckdb, table_rows
from txsql.planner.dml import dv_writes, few_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DDL = "id BIGINT, v VARCHAR, k INTEGER"
COLUMNS = "id, v, k"


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id BIGINT, v STRING, k INT)")
    for low in (0, 100):  # two files of 40 rows
        session.sql(
            f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING), "
            f"CAST(id % 4 AS INT) FROM range({low}, {low + 40})"
        )
    return session


@pytest.fixture()
def python_stages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every mapInArrow txsql builds (a Python stage in the statement's job)."""
    seen: list[str] = []
    real = DataFrame.mapInArrow

    def spy(self: DataFrame, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(args[0], "__name__", "?"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DataFrame, "mapInArrow", spy)
    return seen


def _jobs(s: txsql.Session, statement: str) -> tuple[txsql.Result, int]:
    sc: Any = s.spark.sparkContext
    group = f"txsql-few-rows-{uuid.uuid4().hex}"
    sc.setJobGroup(group, statement)
    try:
        result = s.sql(statement)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def test_point_dml_on_files_past_the_bound_runs_one_job_without_python(
    s: txsql.Session, python_stages: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dv_writes, "DIRECT_ROWS", 30)  # each file holds 40 rows
    result = check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id = 17")
    assert result.metrics["num_deleted_rows"] == 1
    deleted, real = _jobs(s, "DELETE FROM t WHERE id IN (5, 120)")
    assert (deleted.metrics["num_deleted_rows"], deleted.metrics["spark_jobs"], real) == (2, 1, 1)
    updated, real = _jobs(s, "UPDATE t SET v = 'x' WHERE id = 121")
    assert (updated.metrics["num_updated_rows"], updated.metrics["spark_jobs"], real) == (1, 1, 1)
    assert python_stages == []
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = concat(v, '!') WHERE id > 130")


def test_more_rows_than_a_task_may_collect_fall_back_exactly(
    s: txsql.Session, python_stages: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dv_writes, "DIRECT_ROWS", 4)  # a cap of one row per task
    deleted, real = _jobs(s, "DELETE FROM t WHERE k = 1")  # 10 rows per file
    # The collection stopped at the cap; the executors grouped the rows instead.
    assert (deleted.metrics["num_deleted_rows"], deleted.metrics["spark_jobs"], real) == (20, 2, 2)
    assert python_stages == ["_group_task"]
    result = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'u' WHERE k = 2")
    assert (result.metrics["num_updated_rows"], result.metrics["spark_jobs"]) == (20, 2)
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE k = 2 AND id < 120")
    assert len(table_rows(s, "t", COLUMNS)) == 45  # 80 - 20 (k = 1) - 15


def test_update_past_the_cap_with_a_random_condition_replaces_what_it_wrote(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback reads the persisted rows: the written and the replaced rows are the
    same draw of rand(), never a second one."""
    monkeypatch.setattr(dv_writes, "DIRECT_ROWS", 4)
    before = table_rows(s, "t", COLUMNS)
    result = s.sql("UPDATE t SET v = 'r' WHERE rand() < 0.5")
    after = table_rows(s, "t", COLUMNS)
    assert len(after) == len(before)
    assert sum(row[1] == "r" for row in after) == result.metrics["num_updated_rows"]
    assert {(i, k) for i, _, k in after} == {(i, k) for i, _, k in before}


@pytest.mark.parametrize("where", ["false", "id < 0 AND id > 0", "k = 1 AND v IS NULL"])
def test_update_matching_nothing_finishes(s: txsql.Session, where: str) -> None:
    """The write observes the rows: a plan Spark proves empty must not leave the UPDATE
    waiting for metrics that never come (run in a thread with a time limit)."""
    results: list[txsql.Result] = []
    worker = threading.Thread(
        target=lambda: results.append(s.sql(f"UPDATE t SET v = 'n' WHERE {where}")), daemon=True
    )
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "UPDATE did not finish"
    assert results[0].metrics["num_updated_rows"] == 0


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)


class _Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


@pytest.mark.parametrize(
    ("settings", "piece"),
    [
        ({}, 4 << 20),
        ({"spark.sql.files.openCostInBytes": "1m"}, 1 << 20),
        ({"spark.sql.files.maxPartitionBytes": "2MB"}, 2 << 20),
        ({"spark.sql.files.openCostInBytes": "65536"}, 65536),
        ({"spark.sql.files.openCostInBytes": "nonsense"}, 4 << 20),
    ],
)
def test_the_cap_assumes_the_smallest_file_pieces_spark_can_cut(
    settings: dict[str, str], piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txsql.log.actions import AddFile

    monkeypatch.setattr(dv_writes, "DIRECT_ROWS", 1_000_000)
    files = [AddFile(f"f{i}", {}, 10 * piece, 0) for i in range(2)]
    session: Any = _Session(settings)
    assert few_rows._cap(session, files) == 1_000_000 // 20


@pytest.mark.parametrize(
    ("master", "cores"), [("local", 1), ("local[2]", 2), ("local[3, 4]", 3), ("yarn", None)]
)
def test_a_known_parallelism_makes_big_files_few_tasks(master: str, cores: int | None) -> None:
    """Spark divides the bytes by the parallelism: two 88 MB files on local[2] are two
    pieces of ~92 MB, two tasks (not 44 of 4 MB); unknown, the 4 MB floor stays."""
    from txsql.log.actions import AddFile

    files = [AddFile(f"f{i}", {}, 88 << 20, 0) for i in range(2)]
    expected = {1: 2, 2: 2, 3: 4, None: 44}[cores]  # local[3]: pieces of ~61 MB
    assert few_rows.most_tasks(_Session({"spark.master": master}), files) == expected  # type: ignore[arg-type]
    settings = {"spark.master": master, "spark.default.parallelism": "8"}
    assert few_rows.most_tasks(_Session(settings), files) == 8  # type: ignore[arg-type]


def test_the_bound_holds_for_the_scans_spark_plans(spark: Any, tmp_path: Path) -> None:
    """Oracle: Spark's own partitioning of real files, at several split settings."""
    from txsql.log.actions import AddFile

    out = str(tmp_path / "p")
    spark.range(0, 600_000, numPartitions=3).selectExpr("id", "uuid() AS u").write.parquet(out)
    paths = sorted(str(p) for p in Path(out).glob("*.parquet"))
    files = [AddFile(p, {}, Path(p).stat().st_size, 0) for p in paths]
    for max_bytes in ("128m", "4m", "1m"):
        spark.conf.set("spark.sql.files.maxPartitionBytes", max_bytes)
        try:
            planned = spark.read.parquet(*paths).rdd.getNumPartitions()
            assert planned <= few_rows.most_tasks(spark, files), max_bytes
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
