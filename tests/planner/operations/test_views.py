"""CREATE TEMP VIEW over txsql tables (re-resolved at each use) and Spark-only statements.

Oracle: the same query run against the table itself (and DuckDB's delta_scan at the
latest version), after every change the view must follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import SqlError, TableExistsError, TxSqlError, UnsupportedStatementError

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, v STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    return s


def rows(s: txsql.Session, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(sql).df.collect())


def test_view_reads_the_latest_version_each_time(session: txsql.Session) -> None:
    session.sql("CREATE TEMP VIEW big AS SELECT id, upper(v) AS v FROM t WHERE id > 1")
    assert rows(session, "SELECT * FROM big") == [(2, "B")]
    session.sql("INSERT INTO t VALUES (3, 'c')")
    assert rows(session, "SELECT * FROM big") == [(2, "B"), (3, "C")]
    session.sql("DELETE FROM t WHERE id = 2")
    latest = session.table("t").version()
    oracle = [
        (i, v.upper())
        for i, v in duckdb_rows(str(Path(session.warehouse) / "t"), latest, "id, v")
        if i > 1
    ]
    assert rows(session, "SELECT * FROM big") == oracle == [(3, "C")]
    # A view over the view, a join, and a write reading the view all follow too.
    session.sql(
        "CREATE OR REPLACE TEMPORARY VIEW big2 AS SELECT b.id FROM big b JOIN t ON b.id = t.id"
    )
    session.sql("INSERT INTO t VALUES (4, 'd')")
    assert rows(session, "SELECT * FROM big2") == [(3,), (4,)]
    session.sql("INSERT INTO t SELECT id + 100, v FROM big")
    assert rows(session, "SELECT id FROM t WHERE id > 100") == [(103,), (104,)]
    # Inside BEGIN the view reads the transaction's snapshot, staged rows included.
    tx = session.begin()
    tx.sql("INSERT INTO t VALUES (5, 'e')")
    assert (5, "E") in rows_of(tx.sql("SELECT * FROM big"))
    tx.rollback()
    assert (5, "E") not in rows(session, "SELECT * FROM big")


def rows_of(result: txsql.Result) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in result.df.collect())


def test_view_rules_and_errors(session: txsql.Session, spark: Any) -> None:
    session.sql("CREATE TEMP VIEW w AS SELECT * FROM t")
    with pytest.raises(TableExistsError):
        session.sql("CREATE TEMP VIEW w AS SELECT 1 AS x")
    session.sql("CREATE TEMP VIEW IF NOT EXISTS w AS SELECT 1 AS x")
    assert rows(session, "SELECT count(*) FROM w") == [(2,)]
    with pytest.raises(UnsupportedStatementError, match="permanent"):
        session.sql("CREATE VIEW perm AS SELECT * FROM t")
    with pytest.raises(SqlError, match="refers to itself"):
        session.sql("CREATE OR REPLACE TEMP VIEW w AS SELECT * FROM w")
    assert rows(session, "SELECT count(*) FROM w") == [(2,)]  # unchanged by the failure
    # A view over Spark data only is an ordinary Spark view.
    session.sql("CREATE TEMP VIEW plain AS SELECT 42 AS answer")
    assert spark.sql("SELECT answer FROM plain").collect()[0][0] == 42
    session.sql("DROP VIEW plain")
    session.sql("DROP VIEW w")
    with pytest.raises(TxSqlError):
        session.sql("SELECT * FROM w")
    session.sql("DROP VIEW IF EXISTS w")


def test_spark_only_statements_pass_and_writers_are_refused(session: txsql.Session) -> None:
    original = session.spark.conf.get("spark.sql.shuffle.partitions")
    session.sql("SET spark.sql.shuffle.partitions = 3")
    assert session.spark.conf.get("spark.sql.shuffle.partitions") == "3"
    session.sql(f"SET spark.sql.shuffle.partitions = {original}")
    session.sql("CACHE TABLE cached AS SELECT * FROM t WHERE id = 1")
    assert session.spark.sql("SELECT * FROM cached").count() == 1
    session.sql("UNCACHE TABLE cached")
    before = session.table("t").version()
    with pytest.raises(UnsupportedStatementError, match="LOAD") as refused:
        session.sql("LOAD DATA LOCAL INPATH '/tmp/x' INTO TABLE t")
    assert "INSERT INTO" in (refused.value.hint or "")
    assert session.table("t").version() == before
    assert rows(session, "SELECT * FROM t") == [(1, "a"), (2, "b")]
