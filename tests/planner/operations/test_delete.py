"""DELETE: DuckDB as the oracle, DVs other readers accept, metadata-only and copy-on-write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.planner.dml_helpers import (
    assert_readers_agree,
    check_against_duckdb,
    commit,
    files,
    table_rows,
)
from txsql.errors import SqlError, TableNotFoundError, TxSqlError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DDL = "id BIGINT, v VARCHAR, p INTEGER"
COLUMNS = "id, v, p"
DELETE_METRICS = {
    "numAddedFiles",
    "numRemovedFiles",
    "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved",
    "numDeletionVectorsUpdated",
    "numAddedChangeFiles",
    "numDeletedRows",
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


def _create(s: txsql.Session, partitioned: bool, properties: str = "") -> None:
    s.sql(
        f"CREATE TABLE t (id BIGINT, v STRING, p INT)"
        f"{' PARTITIONED BY (p)' if partitioned else ''}{properties}"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, NULL, 2), (4, 'd', 2)")
    s.sql("INSERT INTO t VALUES (5, 'a', 1), (6, NULL, 3), (7, 'g', 3), (8, 'h', NULL)")


@pytest.mark.parametrize("partitioned", [False, True])
def test_deletes_match_duckdb_and_other_readers(s: txsql.Session, partitioned: bool) -> None:
    _create(s, partitioned)
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id = 2")
    # Rows where the predicate is NULL (v IS NULL) must survive.
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE v <> 'a'")
    result = check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t AS x WHERE x.p = 1 OR id > 7")
    assert result.operation == "DELETE"
    assert result.metrics["num_deleted_rows"] == result.metrics["num_affected_rows"]
    check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id = 100")  # nothing matches
    assert table_rows(s, "t", COLUMNS) == [(3, None, 2), (6, None, 3)]


def test_one_row_delete_writes_one_small_dv_and_dvs_accumulate(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    s.sql("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 'x', 9 FROM range(10, 13)")
    parquet_before = files(s, "t", ".parquet")
    first = s.sql("DELETE FROM t WHERE id = 11")
    assert files(s, "t", ".parquet") == parquet_before  # no data file written
    dvs = files(s, "t", ".bin")
    assert len(dvs) == 1 and all("/" not in name for name in dvs)
    assert (Path(s.table("t").location) / dvs.pop()).stat().st_size < 1024
    actions = commit(s, "t", first.version or 0)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "DELETE"
    assert info["operationParameters"] == {"predicate": json.dumps(["id = 11"])}
    assert set(info["operationMetrics"]) == DELETE_METRICS
    assert info["operationMetrics"]["numDeletedRows"] == "1"
    assert info["operationMetrics"]["numDeletionVectorsAdded"] == "1"
    assert info["operationMetrics"]["numRemovedFiles"] == "0"
    remove = next(a["remove"] for a in actions if "remove" in a)
    add = next(a["add"] for a in actions if "add" in a)
    assert remove["path"] == add["path"] and "deletionVector" not in remove
    assert remove["extendedFileMetadata"] is True and remove["dataChange"] is True
    assert add["deletionVector"]["cardinality"] == 1
    assert json.loads(add["stats"])["tightBounds"] is False
    assert json.loads(add["stats"])["numRecords"] == 3  # physical rows, unchanged

    second = s.sql("DELETE FROM t WHERE id = 12")  # same file: the DV grows
    actions = commit(s, "t", second.version or 0)
    add = next(a["add"] for a in actions if "add" in a)
    remove = next(a["remove"] for a in actions if "remove" in a)
    assert add["deletionVector"]["cardinality"] == 2
    assert remove["deletionVector"]["cardinality"] == 1
    assert actions[0]["commitInfo"]["operationMetrics"]["numDeletionVectorsUpdated"] == "1"

    third = s.sql("DELETE FROM t WHERE id = 10")  # the file's last row: file removed
    actions = commit(s, "t", third.version or 0)
    assert [next(iter(a)) for a in actions] == ["commitInfo", "remove"]
    assert actions[1]["remove"]["deletionVector"]["cardinality"] == 2
    metrics = actions[0]["commitInfo"]["operationMetrics"]
    assert (metrics["numRemovedFiles"], metrics["numDeletedRows"]) == ("1", "1")
    assert metrics["numDeletionVectorsRemoved"] == "1"
    assert [r[0] for r in table_rows(s, "t", "id")] == list(range(1, 9))
    assert_readers_agree(s, "t", COLUMNS, table_rows(s, "t", COLUMNS))


def test_partition_deletes_remove_files_without_scanning(s: txsql.Session) -> None:
    _create(s, partitioned=True)
    result = s.sql("DELETE FROM t WHERE p = 1")
    assert result.metrics == {"num_affected_rows": 3, "num_deleted_rows": 3, "spark_jobs": 0}
    metrics = result.operation_metrics
    assert "numCopiedRows" not in metrics and metrics["numRemovedFiles"] == "2"
    assert files(s, "t", ".bin") == set()
    everything = s.sql("DELETE FROM t")
    info = commit(s, "t", everything.version or 0)[0]["commitInfo"]
    assert info["operationParameters"] == {"predicate": "[]"}
    assert everything.metrics["num_deleted_rows"] == 5
    assert table_rows(s, "t", COLUMNS) == []
    assert_readers_agree(s, "t", COLUMNS, [])


def test_delete_with_subqueries(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    s.sql("CREATE TABLE u (k BIGINT)")
    s.sql("INSERT INTO u VALUES (1), (4), (NULL)")
    s.sql("DELETE FROM t WHERE id IN (SELECT k FROM u)")
    s.sql("DELETE FROM t AS a WHERE EXISTS (SELECT 1 FROM t AS b WHERE b.id = a.id + 1)")
    # After the first DELETE ids 2,3,5,6,7,8 remain; the second keeps those without id+1.
    assert [r[0] for r in table_rows(s, "t", "id")] == [3, 8]


def test_copy_on_write_without_deletion_vectors(s: txsql.Session) -> None:
    _create(s, False, " TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    result = check_against_duckdb(s, DDL, COLUMNS, "DELETE FROM t WHERE id IN (1, 6)")
    assert files(s, "t", ".bin") == set()
    metrics = result.operation_metrics
    assert (metrics["numRemovedFiles"], metrics["numAddedFiles"]) == ("2", "2")
    # INSERT ... VALUES writes one 4-row file: each rewrite copies the other 3 rows.
    assert (metrics["numCopiedRows"], metrics["numDeletedRows"]) == ("6", "2")
    assert metrics["numDeletionVectorsAdded"] == "0"
    actions = commit(s, "t", result.version or 0)
    assert all("deletionVector" not in a.get("add", {}) for a in actions)


def test_failed_deletes_leave_the_table_unchanged(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    version = s.table("t").version()
    before = files(s, "t", "")
    with pytest.raises(SqlError, match="time-travel"):
        s.sql("DELETE FROM t VERSION AS OF 1 WHERE id = 1")
    with pytest.raises(TxSqlError):
        s.sql("DELETE FROM t WHERE no_such_column = 1")
    with pytest.raises(TxSqlError):
        s.sql("DELETE FROM t WHERE id = 1 AND assert_true(id > 5) IS NULL")
    with pytest.raises(TableNotFoundError):
        s.sql("DELETE FROM missing WHERE id = 1")
    assert s.table("t").version() == version
    assert files(s, "t", "") == before
    assert len(table_rows(s, "t", COLUMNS)) == 8


def test_deletes_inside_a_transaction_read_their_own_writes(s: txsql.Session) -> None:
    _create(s, partitioned=False)
    s.sql("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 'x', 9 FROM range(10, 13)")
    version = s.table("t").version()
    tx = s.begin()
    tx.sql("DELETE FROM t WHERE id = 10")
    assert tx.sql("SELECT count(*) FROM t").df.collect()[0][0] == 10
    staged = tx.sql("DELETE FROM t WHERE id = 11 OR id = 10")  # id 10 is already gone
    assert staged.metrics["num_deleted_rows"] == 1 and staged.version is None
    assert s.table("t").version() == version  # nothing committed yet
    done = tx.commit()
    assert done.version == version + 1
    actions = commit(s, "t", version + 1)
    add = next(a["add"] for a in actions if "add" in a)
    assert add["deletionVector"]["cardinality"] == 2  # both deletes in one DV
    assert [r[0] for r in table_rows(s, "t", "id")] == [*range(1, 9), 12]
