"""INSERT OVERWRITE (whole, static, dynamic partitions) and REPLACE WHERE.

DuckDB is the oracle: the same starting rows go into a plain DuckDB table and the
equivalent DELETE + INSERT statements run there; final contents must match. Every version
txsql wrote must read the same through DuckDB's delta_scan and deltalake's QueryBuilder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError, SqlError, TxSqlError
from txsql.log.deltalog import DeltaLog

pytestmark = [pytest.mark.spark]

COLUMNS = "id, p, v"
ROWS = "(1, 'a', 1.5), (2, 'a', NULL), (2, 'a', NULL), (3, 'b', 3.0), (4, 'c', 4.0), (5, NULL, 5.0)"


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, p STRING, v DOUBLE) PARTITIONED BY (p)")
    s.sql(f"INSERT INTO t VALUES {ROWS}")
    s.sql("CREATE TABLE u (id INT, p STRING, v DOUBLE)")  # unpartitioned
    s.sql(f"INSERT INTO u VALUES {ROWS}")
    return s


def oracle(statements: list[str]) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, p VARCHAR, v DOUBLE)")
    con.execute(f"INSERT INTO t VALUES {ROWS}")
    for statement in statements:
        con.execute(statement)
    return sorted(con.execute(f"SELECT {COLUMNS} FROM t").fetchall(), key=repr)


def txsql_rows(s: txsql.Session, table: str = "t", version: int | None = None) -> list[Any]:
    at = f" VERSION AS OF {version}" if version is not None else ""
    return sorted(
        (tuple(r) for r in s.sql(f"SELECT {COLUMNS} FROM {table}{at}").df.collect()), key=repr
    )


def check_readers(s: txsql.Session, table: str = "t") -> None:
    """DuckDB and deltalake read every version exactly as txsql does."""
    root = str(Path(s.warehouse) / table)
    latest = DeltaLog.for_path(root).latest_version()
    assert latest is not None
    for version in range(1, latest + 1):
        expected = txsql_rows(s, table, version)
        assert sorted(duckdb_rows(root, version, COLUMNS), key=repr) == expected, version
        assert sorted(deltalake_rows(root, version, COLUMNS), key=repr) == expected, version


def commit_info(s: txsql.Session, table: str = "t") -> dict[str, Any]:
    log = DeltaLog.for_path(str(Path(s.warehouse) / table))
    info = log.snapshot().commit_info
    assert info is not None
    return {"parameters": info.operation_parameters, "metrics": info.operation_metrics}


@pytest.mark.parametrize("table", ["t", "u"])
def test_overwrite_whole_table_matches_duckdb(session: txsql.Session, table: str) -> None:
    r = session.sql(f"INSERT OVERWRITE {table} SELECT id + 10, p, v FROM {table} WHERE id > 2")
    assert r.metrics["num_inserted_rows"] == 3
    expected = oracle(
        [
            "CREATE TABLE s AS SELECT id + 10 AS id, p, v FROM t WHERE id > 2",
            "DELETE FROM t",
            "INSERT INTO t SELECT * FROM s",
        ]
    )
    assert txsql_rows(session, table) == expected
    info = commit_info(session, table)
    assert info["parameters"]["mode"] == "Overwrite"
    assert info["metrics"]["numOutputRows"] == "3"
    check_readers(session, table)


def test_overwrite_with_empty_source_empties_table(session: txsql.Session) -> None:
    session.sql("INSERT OVERWRITE t SELECT * FROM t WHERE id < 0")
    assert txsql_rows(session) == []
    assert txsql_rows(session, version=1) == oracle([])  # time travel still sees the rows
    check_readers(session)


def test_static_partition_overwrite_matches_duckdb(session: txsql.Session) -> None:
    session.sql("INSERT OVERWRITE t PARTITION (p = 'a') VALUES (7, 7.0), (8, NULL)")
    expected = oracle(
        ["DELETE FROM t WHERE p = 'a'", "INSERT INTO t VALUES (7, 'a', 7.0), (8, 'a', NULL)"]
    )
    assert txsql_rows(session) == expected
    info = commit_info(session)
    assert json.loads(info["parameters"]["predicate"]) == ["p = 'a'"]
    assert info["metrics"]["numRemovedFiles"] == "1"
    check_readers(session)


def test_dynamic_partition_overwrite_matches_duckdb(session: txsql.Session) -> None:
    source = (
        "SELECT 9 AS id, 'b' AS p, 9.0 AS v UNION ALL SELECT 10, NULL, NULL "
        "UNION ALL SELECT 11, 'd', 1.0"
    )
    session.sql(f"INSERT OVERWRITE t PARTITION (p) SELECT id, p, v FROM ({source})")
    expected = oracle(
        [
            f"CREATE TABLE s AS {source}",
            "DELETE FROM t WHERE p IN (SELECT p FROM s) OR (p IS NULL AND EXISTS "
            "(SELECT 1 FROM s WHERE p IS NULL))",
            "INSERT INTO t SELECT * FROM s",
        ]
    )
    assert txsql_rows(session) == expected
    info = commit_info(session)
    assert info["parameters"]["isDynamicPartitionOverwrite"] == "true"
    check_readers(session)


def test_dynamic_mode_from_spark_conf(session: txsql.Session, spark: Any) -> None:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        session.sql("INSERT OVERWRITE t SELECT 12, 'c', 12.0")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    expected = oracle(["DELETE FROM t WHERE p = 'c'", "INSERT INTO t VALUES (12, 'c', 12.0)"])
    assert txsql_rows(session) == expected


@pytest.mark.parametrize(
    ("condition", "values"),
    [
        ("p = 'a'", "(20, 'a', 1.0)"),  # partition-only: whole files go
        ("v >= 3", "(21, 'z', 3.5), (22, NULL, 9.0)"),  # data column: files rewritten
        ("id > 100", "(101, 'b', NULL)"),  # matches nothing
    ],
)
def test_replace_where_matches_duckdb(session: txsql.Session, condition: str, values: str) -> None:
    for table in ("t", "u"):
        session.sql(f"INSERT INTO {table} REPLACE WHERE {condition} VALUES {values}")
        expected = oracle([f"DELETE FROM t WHERE {condition}", f"INSERT INTO t VALUES {values}"])
        assert txsql_rows(session, table) == expected, table
        info = commit_info(session, table)
        assert json.loads(info["parameters"]["predicate"]) == [condition]
        deleted = len(oracle([])) - len(oracle([f"DELETE FROM t WHERE {condition}"]))
        assert info["metrics"]["numDeletedRows"] == str(deleted)
        check_readers(session, table)


def test_replace_where_rejects_rows_outside_the_condition(session: txsql.Session) -> None:
    before = txsql_rows(session)
    with pytest.raises(TxSqlError, match="REPLACE WHERE"):
        session.sql("INSERT INTO t REPLACE WHERE p = 'a' VALUES (30, 'b', 1.0)")
    assert txsql_rows(session) == before
    assert DeltaLog.for_path(str(Path(session.warehouse) / "t")).latest_version() == 1


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT OVERWRITE t SELECT 1, 'a'",  # missing column
        "INSERT OVERWRITE t SELECT 1, 'a', 1.0, 2",  # extra column
        "INSERT OVERWRITE t SELECT 'not a number', 'a', 1.0",  # impossible cast
        "INSERT OVERWRITE t PARTITION (p = 'a') SELECT 1, 'x', 1.0",  # too many for static
        "INSERT OVERWRITE t PARTITION (v = 1) SELECT 1, 'x'",  # not a partition column
        "INSERT OVERWRITE u PARTITION (p) SELECT 1, 'x', 1.0",  # unpartitioned table
    ],
)
def test_schema_errors_leave_table_unchanged(session: txsql.Session, statement: str) -> None:
    before = {name: txsql_rows(session, name) for name in ("t", "u")}
    with pytest.raises((SchemaError, SqlError)):
        session.sql(statement)
    assert {name: txsql_rows(session, name) for name in ("t", "u")} == before
    for name in ("t", "u"):
        assert DeltaLog.for_path(str(Path(session.warehouse) / name)).latest_version() == 1
