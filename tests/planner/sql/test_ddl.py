"""The DDL / catalog statements parse into the typed statements they mean (no Spark)."""

from __future__ import annotations

import pytest

from txsql.errors import SqlError, SqlParseError, UnsupportedStatementError
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.ddl_statements import (
    CreateSchema,
    DescribeTable,
    DropSchema,
    DropTable,
    RenameTable,
    ShowColumns,
    ShowCreateTable,
    ShowSchemas,
    ShowTables,
    ShowTblProperties,
    TruncateTable,
    UseSchema,
)
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.script import parse_script
from txsql.planner.sql.statements import DescribeHistory, Statement


def _build(sql: str) -> Statement:
    (parsed,) = parse_script(sql)
    return build_statement(parsed.expression)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE IF EXISTS s.t", DropTable(TableRef(name="s.t"), True)),
        ("TRUNCATE TABLE t", TruncateTable(TableRef(name="t"))),
        ("ALTER TABLE t RENAME TO s.u", RenameTable(TableRef(name="t"), TableRef(name="s.u"))),
        (
            "CREATE SCHEMA IF NOT EXISTS s COMMENT 'c' LOCATION '/x'",
            CreateSchema("s", True, "c", "/x"),
        ),
        ("CREATE DATABASE s", CreateSchema("s")),
        ("DROP SCHEMA IF EXISTS s CASCADE", DropSchema("s", True, True)),
        ("DROP DATABASE s RESTRICT", DropSchema("s")),
        ("USE s", UseSchema("s")),
        ("USE DATABASE s", UseSchema("s")),
        ("SHOW DATABASES LIKE 'a*'", ShowSchemas("a*")),
        ("SHOW SCHEMAS", ShowSchemas()),
        ("SHOW TABLES FROM s LIKE 'x*'", ShowTables("s", "x*")),
        ("SHOW TABLES 'x*'", ShowTables(None, "x*")),
        (
            "SHOW TBLPROPERTIES t (delta.appendOnly)",
            ShowTblProperties(TableRef(name="t"), "delta.appendOnly"),
        ),
        ("SHOW TBLPROPERTIES s.t ('k')", ShowTblProperties(TableRef(name="s.t"), "k")),
        ("SHOW COLUMNS IN t IN s", ShowColumns(TableRef(name="s.t"))),
        ("SHOW COLUMNS FROM s.t", ShowColumns(TableRef(name="s.t"))),
        ("SHOW CREATE TABLE t", ShowCreateTable(TableRef(name="t"))),
        ("DESCRIBE t", DescribeTable(TableRef(name="t"))),
        ("DESC TABLE EXTENDED s.t", DescribeTable(TableRef(name="s.t"), True)),
        ("DESCRIBE HISTORY t LIMIT 2", DescribeHistory(TableRef(name="t"), 2)),
    ],
)
def test_statements(sql: str, expected: Statement) -> None:
    assert _build(sql) == expected


@pytest.mark.parametrize(
    ("sql", "error", "match"),
    [
        ("DROP TABLE delta.`/data/t`", UnsupportedStatementError, "path table"),
        ("DROP TABLE t PURGE", UnsupportedStatementError, "PURGE"),
        ("TRUNCATE TABLE t PARTITION (p = 1)", UnsupportedStatementError, "PARTITION"),
        ("ALTER TABLE t RENAME TO delta.`/x`", UnsupportedStatementError, "paths"),
        ("SHOW FUNCTIONS", UnsupportedStatementError, "SHOW FUNCTIONS"),
        ("SHOW COLUMNS IN s.t IN s", SqlError, "twice"),
        ("DROP TABLE t@v1", SqlError, "time-travel"),
        ("DESCRIBE HISTORY t LIMIT x", SqlParseError, "LIMIT"),
        ("CREATE OR REPLACE SCHEMA s", UnsupportedStatementError, "REPLACE"),
    ],
)
def test_refusals_are_typed_with_hints(sql: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as caught:
        _build(sql)
    assert isinstance(caught.value, SqlError) and caught.value.hint
