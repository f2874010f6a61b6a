"""SQL conditions -> the predicate model, and file pruning (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import sqlglot
from sqlglot import exp

import txsql.planner.sql.dialect  # noqa: F401 - registers the txsql dialect
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.predicates import (
    TRUE,
    And,
    Column,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Opaque,
    Or,
    Predicate,
    is_deterministic,
    to_sql,
)
from txsql.log.snapshot import Snapshot
from txsql.planner.sql.predicates import plan_files, predicate_sql, prune_files, to_predicate

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "Id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "d", "type": "date", "nullable": True, "metadata": {}},
        {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
    ],
}


def _where(sql: str) -> exp.Expr:
    statement = sqlglot.parse_one(f"DELETE FROM t AS a WHERE {sql}", read="txsql")
    return statement.args["where"].this


def _model(sql: str) -> Predicate:
    return to_predicate(_where(sql), SCHEMA, ["a", "t"])


def test_comparisons_resolve_columns_and_type_literals() -> None:
    assert _model("ID = 5 AND a.name <> 'x'") == And(
        (Comparison("=", Column("Id"), Literal(5)), Comparison("!=", Column("name"), Literal("x")))
    )
    assert _model("d >= DATE'2024-02-01'") == Comparison(
        ">=", Column("d"), Literal(dt.date(2024, 2, 1))
    )
    assert _model("id < -2.5") == Comparison("<", Column("Id"), Literal(Decimal("-2.5")))
    assert _model("id = 1L") == Comparison("=", Column("Id"), Literal(1))
    assert _model("5 <=> p") == Comparison("<=>", Literal(5), Column("p"))


def test_in_null_between_not_or() -> None:
    assert _model("p IN (1, 2) OR name IS NULL") == Or(
        (In(Column("p"), (Literal(1), Literal(2))), IsNull(Column("name")))
    )
    assert _model("name IS NOT NULL") == IsNotNull(Column("name"))
    assert _model("NOT (p BETWEEN 1 AND 3)") == Not(
        And((Comparison(">=", Column("p"), Literal(1)), Comparison("<=", Column("p"), Literal(3))))
    )
    assert to_predicate(None, SCHEMA) == TRUE


def test_unmodelled_conditions_become_opaque_with_columns_and_determinism() -> None:
    like = _model("a.name LIKE 'x%'")
    assert like == Opaque("name LIKE 'x%'", frozenset({"name"}), True)
    assert not is_deterministic(_model("rand() < 0.5"))
    assert not is_deterministic(_model("d < current_date()"))
    sub = _model("id IN (SELECT k FROM u)")
    assert isinstance(sub, Opaque) and not sub.deterministic
    other_table = _model("b.id = 1")  # not the target's column
    assert isinstance(other_table, Opaque) and not other_table.deterministic
    mixed = _model("p = 1 AND upper(name) = 'X'")
    assert isinstance(mixed, And) and mixed.children[0] == Comparison("=", Column("p"), Literal(1))
    assert predicate_sql(_where("a.p = 1 AND a.name LIKE 'x%'"), SCHEMA, ["a"]) == (
        "p = 1 AND name LIKE 'x%'"
    )
    assert to_sql(_model("upper(a.name) = 'X'")) == "UPPER(name) = 'X'"


def _file(path: str, p: int | None, lo: int, hi: int, rows: int = 10) -> AddFile:
    stats = {
        "numRecords": rows,
        "minValues": {"Id": lo},
        "maxValues": {"Id": hi},
        "nullCount": {"Id": 0},
    }
    values = {"p": None if p is None else str(p)}
    return AddFile(path, values, 100, 1, stats=json.dumps(stats))


def _snapshot(files: list[AddFile]) -> Snapshot:
    metadata = Metadata("id", json.dumps(SCHEMA), ("p",))
    return Snapshot("/t", 3, Protocol(1, 2), metadata, tuple(files))


def test_pruning_by_partition_and_stats() -> None:
    files = [
        _file("a", 1, 0, 9),
        _file("b", 1, 10, 19),
        _file("c", 2, 0, 9),
        _file("d", None, 0, 9),
    ]
    snapshot = _snapshot(files)
    kept, skipped = prune_files(snapshot, _model("p = 1 AND id = 12"))
    assert [f.path for f in kept] == ["b"] and [f.path for f in skipped] == ["a", "c", "d"]
    plan = plan_files(snapshot, _model("p = 1 AND id = 12"), whole_files=True)
    assert plan.skipped_by_partition == 2 and [f.path for f in plan.scan] == ["b"]
    # A partition-only predicate covers whole files; NULL partitions never match.
    whole = plan_files(snapshot, _model("p = 1"), whole_files=True)
    assert [f.path for f in whole.whole] == ["a", "b"] and not whole.scan
    everything = plan_files(snapshot, TRUE, whole_files=True)
    assert len(everything.whole) == 4
    # An opaque conjunct forces a scan of every file the rest cannot exclude.
    opaque = plan_files(snapshot, _model("p = 2 AND name LIKE 'x%'"), whole_files=True)
    assert [f.path for f in opaque.scan] == ["c"] and not opaque.whole
    no_stats = plan_files(
        _snapshot([AddFile("e", {"p": "1"}, 1, 1)]), _model("id = 5"), whole_files=True
    )
    assert [f.path for f in no_stats.scan] == ["e"]
