"""Parsing and building of REPLACE, CLONE, temp views, MERGE WITH SCHEMA EVOLUTION and
Spark-only statements (no Spark needed)."""

from __future__ import annotations

import pytest
import sqlglot

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.dialect import DIALECT
from txsql.planner.sql.statements import (
    CloneTable,
    CreateTable,
    CreateView,
    Merge,
    SparkStatement,
    Statement,
)


def _build(sql: str) -> Statement:
    return build_statement(sqlglot.parse_one(sql, read=DIALECT))


@pytest.mark.parametrize(
    ("sql", "replace", "has_query"),
    [
        ("CREATE TABLE t (a INT)", "", False),
        ("CREATE OR REPLACE TABLE t (a INT) PARTITIONED BY (a)", "CREATE OR REPLACE", False),
        ("CREATE OR REPLACE TABLE t AS SELECT 1 AS a", "CREATE OR REPLACE", True),
        ("REPLACE TABLE t (a INT) USING DELTA", "REPLACE", False),
        ("REPLACE TABLE t AS SELECT 1 AS a", "REPLACE", True),
    ],
)
def test_replace_forms(sql: str, replace: str, has_query: bool) -> None:
    statement = _build(sql)
    assert isinstance(statement, CreateTable)
    assert statement.replace == replace
    assert (statement.query is not None) == has_query
    assert statement.target.name == "t"


def test_replace_with_if_not_exists_is_refused() -> None:
    with pytest.raises(SqlError, match="IF NOT EXISTS"):
        _build("CREATE OR REPLACE TABLE IF NOT EXISTS t (a INT)")


def test_clone_forms() -> None:
    clone = _build(
        "CREATE OR REPLACE TABLE c SHALLOW CLONE src VERSION AS OF 3 "
        "TBLPROPERTIES ('owner' = 'me') LOCATION '/tmp/c'"
    )
    assert isinstance(clone, CloneTable)
    assert (clone.target.name, clone.source.name, clone.source.version) == ("c", "src", 3)
    assert (clone.replace, clone.location, clone.shallow) == ("CREATE OR REPLACE", "/tmp/c", True)
    assert clone.properties == (("owner", "me"),)
    deep = _build("CREATE TABLE IF NOT EXISTS c DEEP CLONE delta.`/data/src`@v2")
    assert isinstance(deep, CloneTable)
    assert (deep.if_not_exists, deep.shallow, deep.source.path, deep.source.version) == (
        True,
        False,
        "/data/src",
        2,
    )
    at = _build("REPLACE TABLE c SHALLOW CLONE src TIMESTAMP AS OF '2024-01-01'")
    assert isinstance(at, CloneTable) and at.replace == "REPLACE"
    assert at.source.timestamp is not None
    with pytest.raises(SqlError, match="time-travel"):
        _build("CREATE TABLE c@v1 SHALLOW CLONE src")


def test_views_and_passthrough() -> None:
    view = _build("CREATE OR REPLACE TEMPORARY VIEW v AS SELECT * FROM t")
    assert isinstance(view, CreateView) and view.replace and view.name == "v"
    with pytest.raises(UnsupportedStatementError, match="permanent"):
        _build("CREATE VIEW v AS SELECT 1")
    for sql in ("SET a.b = 1", "CACHE TABLE t", "UNCACHE TABLE t", "DROP VIEW v"):
        assert isinstance(_build(sql), SparkStatement), sql
    with pytest.raises(UnsupportedStatementError, match="LOAD"):
        _build("LOAD DATA INPATH '/x' INTO TABLE t")
    with pytest.raises(UnsupportedStatementError, match="MSCK"):
        _build("MSCK REPAIR TABLE t")


def test_merge_with_schema_evolution() -> None:
    sql = "INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    evolving = _build(f"MERGE WITH SCHEMA EVOLUTION {sql}")
    plain = _build(f"MERGE {sql}")
    assert isinstance(evolving, Merge) and isinstance(plain, Merge)
    assert (evolving.schema_evolution, plain.schema_evolution) == (True, False)
