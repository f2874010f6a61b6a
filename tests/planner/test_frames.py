"""Statements leave nothing in Spark's catalog: txsql tables are bound as DataFrames.

Oracle: Spark's own catalog listing (``spark.catalog.listTables``) before and after, and
the rows each statement returns against Spark evaluating the same query over the rows
DuckDB's delta_scan reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows

pytestmark = [pytest.mark.spark]


def temp_views(spark: Any) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, v STRING) TBLPROPERTIES ('delta.enableChangeDataFeed' = true)")
    s.sql("CREATE TABLE u (id INT, w STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    s.sql("INSERT INTO u VALUES (2, 'x'), (3, 'y'), (4, 'z')")
    return s


def test_no_statement_leaves_a_temp_view(session: txsql.Session, spark: Any) -> None:
    before = temp_views(spark)
    statements = [
        "SELECT * FROM t",
        "SELECT t.id, u.w FROM t JOIN u ON t.id = u.id WHERE t.v <> '{not a field}'",
        "SELECT * FROM t VERSION AS OF 1",
        "SELECT count(*) FROM table_changes('t', 1)",
        "EXPLAIN SELECT * FROM t WHERE id = 1",
        "EXPLAIN DELETE FROM t WHERE id = 1",
        "UPDATE t SET v = 'bb' WHERE id = 2",
        "DELETE FROM t WHERE id = 3",
        "MERGE INTO t USING u ON t.id = u.id WHEN MATCHED THEN UPDATE SET v = u.w "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (u.id, u.w)",
        "INSERT INTO t SELECT id + 10, w FROM u WHERE id > 3",
        "CREATE TEMP VIEW big AS SELECT * FROM t WHERE id > 1",
        "SELECT * FROM big",
        "DROP VIEW big",
    ]
    for _ in range(3):
        for statement in statements:
            session.sql(statement)
        tx = session.begin()
        tx.sql("SELECT * FROM t WHERE id = 2")
        tx.sql("UPDATE t SET v = 'again' WHERE id = 2")
        tx.commit()
    assert temp_views(spark) == before
    latest = session.table("t").version()
    expected = sorted(duckdb_rows(str(Path(session.warehouse) / "t"), latest, "id, v"))
    got = sorted(tuple(r) for r in session.sql("SELECT id, v FROM t").df.collect())
    assert got == expected
    assert (2, "again") in got and (14, "z") in got


def test_a_query_result_outlives_its_statement(session: txsql.Session) -> None:
    """The returned DataFrame is analysed already: later statements cannot change it."""
    df = session.sql("SELECT id, v FROM t WHERE id <= 2").df
    session.sql("DELETE FROM t WHERE id = 1")
    session.sql("SELECT * FROM u")
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a"), (2, "b")]


def test_braces_in_literals_survive_binding(session: txsql.Session) -> None:
    session.sql("INSERT INTO t VALUES (7, '{x}'), (8, '}{')")
    got = session.sql("SELECT id FROM t WHERE v IN ('{x}', '}{') ORDER BY id").df.collect()
    assert [r.id for r in got] == [7, 8]


def test_cache_table_as_select_stays_usable(session: txsql.Session, spark: Any) -> None:
    session.sql("CACHE TABLE cached AS SELECT * FROM t WHERE id <= 2")
    session.sql("INSERT INTO t VALUES (0, 'zero')")
    # the cached view keeps the snapshot it read; re-analysis by Spark must still work
    assert sorted(r.id for r in spark.sql("SELECT id FROM cached").collect()) == [1, 2]
    session.sql("UNCACHE TABLE cached")
    spark.catalog.dropTempView("cached")
