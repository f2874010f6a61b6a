"""UPDATE: DuckDB as the oracle, merge-on-read files, partition moves, casts and errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.planner.dml_helpers import (
    assert_readers_agree,
    check_against_duckdb,
    commit,
    files,
    oracle,
    table_rows,
)
from txsql.errors import NotNullViolationError, SchemaError, SqlError, TxSqlError
from txsql.planner.dml import live_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DDL = "id BIGINT, v VARCHAR, n INTEGER, p INTEGER"
COLUMNS = "id, v, n, p"
UPDATE_METRICS = {
    "numAddedFiles",
    "numRemovedFiles",
    "numAddedChangeFiles",
    "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved",
    "numDeletionVectorsUpdated",
    "numUpdatedRows",
    "numCopiedRows",
    "executionTimeMs",
    "scanTimeMs",
    "rewriteTimeMs",
    "numRemovedBytes",
    "numAddedBytes",
}


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _create(s: txsql.Session, partitioned: bool, extra: str = "") -> None:
    s.sql(
        "CREATE TABLE t (id BIGINT NOT NULL, v STRING, n INT, p INT)"
        f"{' PARTITIONED BY (p)' if partitioned else ''}{extra}"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 1, 1), (2, 'b', NULL, 1), (3, NULL, 3, 2), (4, 'd', 4, 2)")
    s.sql("INSERT INTO t VALUES (5, 'e', 5, 1), (6, NULL, 6, 3), (7, 'g', NULL, NULL)")


@pytest.mark.parametrize("deleted_rows_filter", ["literal", "python_udf"])
@pytest.mark.parametrize("partitioned", [False, True])
def test_updates_match_duckdb_and_other_readers(
    s: txsql.Session, partitioned: bool, deleted_rows_filter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Later UPDATEs read files with DVs: rows already deleted are dropped by a literal
    # filter (few) or by a UDF reading the DVs on the executors (many).
    if deleted_rows_filter == "python_udf":
        monkeypatch.setattr(live_rows, "_LITERAL_ROWS", -1)
    _create(s, partitioned)
    parquet_before = files(s, "t", ".parquet")
    first = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = v || '!' WHERE id % 2 = 0")
    assert first.metrics == {"num_affected_rows": 3, "num_updated_rows": 3, "spark_jobs": 1}
    assert parquet_before <= files(s, "t", ".parquet")  # merge-on-read: old files stay
    info = commit(s, "t", first.version or 0)[0]["commitInfo"]
    assert info["operation"] == "UPDATE"
    assert info["operationParameters"] == {"predicate": json.dumps(["id % 2 = 0"])}
    assert set(info["operationMetrics"]) == UPDATE_METRICS
    assert info["operationMetrics"]["numUpdatedRows"] == "3"
    # NULL predicate results leave rows alone; SET may reference other columns.
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t AS x SET n = x.n * 10, v = 'z' WHERE n > 3")
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET n = id + 100, p = 5")  # every row
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'never' WHERE id > 100")


def test_small_update_writes_one_file_per_partition_value(s: txsql.Session) -> None:
    """The changed rows of a small table are written by one task: one new file per partition
    value, not one per file read. DuckDB's own UPDATE gives the same rows."""
    _create(s, partitioned=True)  # two INSERTs: partition 1 has a file from each
    parquet_before = files(s, "t", ".parquet")
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'u' WHERE p IN (1, 2)")
    new = sorted(f.split("/")[0] for f in files(s, "t", ".parquet") - parquet_before)
    assert new == ["p=1", "p=2"]


def test_update_of_a_partition_column_moves_rows(s: txsql.Session) -> None:
    _create(s, partitioned=True)
    result = s.sql("UPDATE t SET p = 9 WHERE id IN (1, 3)")
    actions = commit(s, "t", result.version or 0)
    new_files = [a["add"] for a in actions if "add" in a and "deletionVector" not in a["add"]]
    assert {f["partitionValues"]["p"] for f in new_files} == {"9"}
    assert sum(json.loads(f["stats"])["numRecords"] for f in new_files) == 2
    assert s.sql("SELECT count(*) FROM t WHERE p = 1").df.collect()[0][0] == 2
    assert [r[0] for r in table_rows(s, "t", "id FROM t WHERE p = 9 --")] == [1, 3]
    assert_readers_agree(s, "t", COLUMNS, table_rows(s, "t", COLUMNS))


def test_assignments_cast_and_bad_updates_change_nothing(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    s.sql("UPDATE t SET n = '42', v = 7 WHERE id = 1")  # Spark's assignment casts
    assert table_rows(s, "t", "v, n FROM t WHERE id = 1 --") == [("7", 42)]
    version = s.table("t").version()
    before_files = files(s, "t", "")
    before_rows = table_rows(s, "t", COLUMNS)
    with pytest.raises(SchemaError, match="no column named nope"):
        s.sql("UPDATE t SET nope = 1")
    with pytest.raises(NotNullViolationError, match="NOT NULL"):
        s.sql("UPDATE t SET id = NULL WHERE id = 2")
    with pytest.raises(TxSqlError):
        s.sql("UPDATE t SET n = 'not a number' WHERE id = 3")
    with pytest.raises(SqlError, match="time-travel"):
        s.sql("UPDATE t VERSION AS OF 1 SET n = 1")
    assert s.table("t").version() == version
    assert files(s, "t", "") == before_files  # failed writes leave no files behind
    assert table_rows(s, "t", COLUMNS) == before_rows


def test_non_deterministic_condition_is_applied_consistently(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    result = s.sql("UPDATE t SET v = 'hit' WHERE rand() < 0.5")
    rows = table_rows(s, "t", "id, v")
    assert [r[0] for r in rows] == list(range(1, 8))  # no row lost or duplicated
    assert sum(v == "hit" for _, v in rows) == result.metrics["num_updated_rows"]


def test_copy_on_write_update(s: txsql.Session) -> None:
    _create(s, False, " TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    result = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'cow' WHERE id IN (1, 5)")
    assert files(s, "t", ".bin") == set()
    actions = commit(s, "t", result.version or 0)
    assert all("deletionVector" not in a.get("add", {}) for a in actions)
    metrics = result.operation_metrics
    removed_rows = sum(
        json.loads(a["remove"]["stats"])["numRecords"] for a in actions if "remove" in a
    )
    assert metrics["numUpdatedRows"] == "2"
    assert int(metrics["numCopiedRows"]) == removed_rows - 2  # the rest of the touched files


def test_update_inside_a_transaction_reads_its_own_writes(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    version = s.table("t").version()
    tx = s.begin()
    tx.sql("UPDATE t SET n = 0 WHERE id <= 2")
    tx.sql("UPDATE t SET n = n + 1 WHERE n = 0")  # sees (and re-updates) its own new rows
    tx.sql("DELETE FROM t WHERE id = 7")
    assert s.table("t").version() == version
    tx.commit()
    assert s.table("t").version() == version + 1
    expected = [(1, 1), (2, 1), (3, 3), (4, 4), (5, 5), (6, 6)]
    assert table_rows(s, "t", "id, n") == expected
    assert_readers_agree(s, "t", "id, n", expected)


def _persists(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the DataFrames txsql persists while the test runs."""
    from pyspark.sql.classic.dataframe import DataFrame

    calls: list[int] = []
    real = DataFrame.persist

    def spy(self: DataFrame, *args: object, **kwargs: object) -> DataFrame:
        calls.append(1)
        return real(self, *args, **kwargs)  # type: ignore[arg-type, return-value]

    monkeypatch.setattr(DataFrame, "persist", spy)
    return calls


def _big_files(s: txsql.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four files with DVs already present, each 'too big' for the driver to be handed all
    of a task's matched rows: the write job's list of keys may miss rows (the overflow
    path), so a second job must find them."""
    from txsql.planner.dml import dv_writes

    s.sql("CREATE TABLE t (id BIGINT NOT NULL, v STRING, n INT, p INT)")
    for low in (0, 100, 200, 300):
        s.sql(
            f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING), "
            f"CAST(id % 5 AS INT), CAST(id % 3 AS INT) FROM range({low}, {low + 40})"
        )
    s.sql("DELETE FROM t WHERE n = 4 OR id IN (101, 202)")  # DVs in every file
    monkeypatch.setattr(dv_writes, "DIRECT_ROWS", 4)  # a cap of one row per task


def test_repeatable_update_past_the_cap_stays_exact(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the per-task cap a second job reads the files again and finds the rows the
    first wrote, on files with DVs already present; nothing is persisted (a repeatable
    WHERE matches the same rows twice). DuckDB and deltalake read what DuckDB's own UPDATE
    gives."""
    _big_files(s, monkeypatch)
    persisted = _persists(monkeypatch)
    result = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'u', p = p + 1 WHERE n = 2")
    assert (result.metrics["num_updated_rows"], result.metrics["spark_jobs"]) == (31, 2)
    check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET n = n * 10 WHERE p = 1 AND id % 7 = 3")
    assert len(table_rows(s, "t", COLUMNS)) == 160 - 32 - 2
    # Files that may overflow the cap, a row that does not: one job, nothing persisted.
    result = check_against_duckdb(s, DDL, COLUMNS, "UPDATE t SET v = 'w' WHERE id = 103")
    assert (result.metrics["num_updated_rows"], result.metrics["spark_jobs"]) == (1, 1)
    assert persisted == []


@pytest.mark.parametrize(
    "where", ["rand() < 0.5", "id IN (SELECT id FROM t WHERE rand() < 0.5)", "uuid() < '8'"]
)
def test_unrepeatable_update_past_the_cap_reads_its_persisted_rows(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A random, clock or subquery WHERE could match other rows on a second evaluation:
    those rows are persisted, so the rows written are the rows replaced."""
    _big_files(s, monkeypatch)
    before = table_rows(s, "t", COLUMNS)
    persisted = _persists(monkeypatch)
    result = s.sql(f"UPDATE t SET v = 'r' WHERE {where}")
    after = table_rows(s, "t", COLUMNS)
    assert persisted, "a second evaluation could differ: the rows must be kept"
    assert sorted(r[0] for r in after) == sorted(r[0] for r in before)  # none lost or doubled
    assert sum(r[1] == "r" for r in after) == result.metrics["num_updated_rows"]
    assert_readers_agree(s, "t", COLUMNS, after)


def test_a_small_update_builds_one_projection_between_its_query_and_the_write(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every DataFrame built on the driver is a py4j round trip and an analysis: UPDATE's
    own code (planner, write path) observes its rows and projects the new values once."""
    from pyspark.sql.classic.dataframe import DataFrame

    s.sql("CREATE TABLE t (id BIGINT, v STRING, n INT, p INT) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a', 1, 1), (2, 'b', NULL, 1), (3, NULL, 3, 2)")
    built: list[str] = []
    own = ("txsql/planner/", "txsql/engine/write.py")
    recording = [False]

    def spy(name: str) -> None:
        real = getattr(DataFrame, name)

        def spied(self: DataFrame, *args: object, **kwargs: object) -> object:
            caller = sys._getframe(1).f_code.co_filename.replace("\\", "/")
            if recording[0] and any(part in caller for part in own):
                built.append(name)
            return real(self, *args, **kwargs)

        monkeypatch.setattr(DataFrame, name, spied)

    for name in ("selectExpr", "select", "withColumn", "withColumns", "drop", "observe", "toDF"):
        spy(name)
    statement = "UPDATE t SET n = n * 10, v = 'x' WHERE p = 1"
    before = table_rows(s, "t", COLUMNS)
    recording[0] = True
    s.sql(statement)
    recording[0] = False
    after = table_rows(s, "t", COLUMNS)
    assert after == oracle(DDL, COLUMNS, before, statement)
    assert_readers_agree(s, "t", COLUMNS, after)
    assert sorted(built) == ["observe", "selectExpr"]
