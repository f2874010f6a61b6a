"""SQL text -> typed statement, without Spark (sqlglot only)."""

from __future__ import annotations

import typing

import pytest

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.script import parse_script
from txsql.planner.sql.statements import (
    MATCHED,
    NOT_MATCHED,
    STATEMENT_NAMES,
    Begin,
    ColumnSpec,
    Commit,
    CreateTable,
    Delete,
    Merge,
    RestoreTable,
    Rollback,
    Statement,
    TableRef,
    Update,
)


def _build(sql: str) -> Statement:
    (parsed,) = parse_script(sql)
    return build_statement(parsed.expression)


def test_delete_names_table_alias_and_where() -> None:
    statement = _build("DELETE FROM db.t AS x WHERE x.id > 3")
    assert isinstance(statement, Delete)
    assert statement.target == TableRef(name="db.t")
    assert statement.alias == "x"
    assert statement.where is not None and statement.where.sql() == "x.id > 3"
    everything = _build("DELETE FROM delta.`/tmp/p`")
    assert isinstance(everything, Delete)
    assert everything.target == TableRef(path="/tmp/p") and everything.where is None


def test_update_keeps_assignments_in_order() -> None:
    statement = _build("UPDATE t SET b = b + 1, a = 'x' WHERE id = 2")
    assert isinstance(statement, Update)
    assert statement.target == TableRef(name="t")
    assert [(c, v.sql()) for c, v in statement.assignments] == [("b", "b + 1"), ("a", "'x'")]
    with pytest.raises(SqlError, match="assigned twice"):
        _build("UPDATE t SET a = 1, A = 2")


def test_merge_clauses_keep_kind_action_and_order() -> None:
    statement = _build(
        "MERGE INTO t USING s ON t.id = s.id "
        "WHEN MATCHED AND s.d THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    assert isinstance(statement, Merge)
    assert (statement.target, statement.target_alias, statement.source_alias) == (
        TableRef(name="t"),
        "t",
        "s",
    )
    assert [(c.match, c.action) for c in statement.clauses] == [
        (MATCHED, "delete"),
        (MATCHED, "update"),
        (NOT_MATCHED, "insert"),
    ]
    with pytest.raises(SqlError, match="only the last WHEN MATCHED"):
        _build(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE "
            "WHEN MATCHED AND s.x THEN UPDATE SET v = 1"
        )


def test_create_table_reads_columns_partitioning_and_properties() -> None:
    statement = _build(
        "CREATE TABLE IF NOT EXISTS t (id BIGINT NOT NULL, p STRING COMMENT 'part') "
        "USING DELTA PARTITIONED BY (p) TBLPROPERTIES ('delta.appendOnly' = 'true')"
    )
    assert isinstance(statement, CreateTable)
    assert statement.target == TableRef(name="t") and statement.if_not_exists
    assert statement.columns == (
        ColumnSpec("id", "BIGINT", nullable=False),
        ColumnSpec("p", "STRING", comment="part"),
    )
    assert statement.partition_columns == ("p",)
    assert statement.properties == (("delta.appendOnly", "true"),)
    with pytest.raises(UnsupportedStatementError, match="DEFAULT"):
        _build("CREATE TABLE t (id INT DEFAULT 1)")


def test_restore_to_version_or_timestamp() -> None:
    assert _build("RESTORE TABLE t TO VERSION AS OF 3") == RestoreTable(TableRef(name="t"), 3)
    at = _build("RESTORE TABLE t TO TIMESTAMP AS OF '2026-01-01'")
    assert isinstance(at, RestoreTable) and at.version is None and at.timestamp is not None
    with pytest.raises(SqlError, match="time-travel"):
        _build("RESTORE TABLE t@v1 TO VERSION AS OF 0")


def test_transaction_control() -> None:
    assert isinstance(_build("BEGIN"), Begin)
    assert isinstance(_build("COMMIT"), Commit)
    assert isinstance(_build("ROLLBACK"), Rollback)


def test_unsupported_statement_lists_what_txsql_runs() -> None:
    with pytest.raises(UnsupportedStatementError) as caught:
        _build("DROP VIEW v")
    assert "DROP" in str(caught.value)
    hint = caught.value.hint or ""
    for name in STATEMENT_NAMES.values():
        assert name in hint


def test_every_statement_type_has_a_name() -> None:
    assert set(STATEMENT_NAMES) == set(_union_members(Statement))


def _union_members(union: object) -> list[type]:
    members: list[type] = []
    for arg in typing.get_args(union):
        members.extend(_union_members(arg) if typing.get_args(arg) else [arg])
    return members
