"""SET targets that are struct fields (UPDATE t SET s.a = ..., MERGE ... UPDATE SET t.s.b = ...)
keep the struct's other fields, at any depth; conflicting targets are refused by name.

The oracle is DuckDB's delta_scan reading the table after each statement, compared with
rows computed here in Python from the statement's meaning.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import SchemaError, SqlError, TxSqlError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DDL = (
    "CREATE TABLE n (id INT, s STRUCT<a: INT, b: STRING, t: STRUCT<u: INT, v: INT>>, "
    "`dot.col` INT) TBLPROPERTIES ('delta.enableDeletionVectors' = {dv})"
)
ROWS: dict[int, dict[str, Any]] = {
    1: {"s": {"a": 1, "b": "x", "t": {"u": 10, "v": 20}}, "dot.col": 5},
    2: {"s": None, "dot.col": 6},
    3: {"s": {"a": 3, "b": None, "t": None}, "dot.col": 7},
}
INSERT = (
    "INSERT INTO n VALUES "
    "(1, named_struct('a', 1, 'b', 'x', 't', named_struct('u', 10, 'v', 20)), 5), "
    "(2, NULL, 6), "
    "(3, named_struct('a', 3, 'b', CAST(NULL AS STRING), 't', "
    "CAST(NULL AS STRUCT<u: INT, v: INT>)), 7)"
)
Rows = dict[int, dict[str, Any]]


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _struct(row: dict[str, Any]) -> dict[str, Any]:
    """A row's struct after a field assignment: a NULL struct becomes one of NULL fields
    (Delta rebuilds the struct from its fields)."""
    if row["s"] is None:
        row["s"] = {"a": None, "b": None, "t": None}
    return row["s"]


def _nested(struct: dict[str, Any]) -> dict[str, Any]:
    if struct["t"] is None:
        struct["t"] = {"u": None, "v": None}
    return struct["t"]


def _check(s: txsql.Session, expected: Rows) -> None:
    handle = s.table("n")
    rows = duckdb_rows(handle.location, handle.version(), 'id, s, "dot.col"')
    assert rows == [(i, r["s"], r["dot.col"]) for i, r in sorted(expected.items())]


def _update_one(rows: Rows) -> None:  # UPDATE n SET s.a = 100 WHERE id = 1
    _struct(rows[1])["a"] = 100


def _update_deep(rows: Rows) -> None:
    # UPDATE n SET n.s.t.u = s.a + 1, s.b = upper(s.b), `dot.col` = 0 WHERE id <= 2:
    # every value is computed from the row as it was.
    for i in (1, 2):
        old = copy.deepcopy(rows[i])
        struct = _struct(rows[i])
        a = old["s"]["a"] if old["s"] else None
        b = old["s"]["b"] if old["s"] else None
        _nested(struct)["u"] = None if a is None else a + 1
        struct["b"] = None if b is None else b.upper()
        rows[i]["dot.col"] = 0


def _update_alias(rows: Rows) -> None:  # UPDATE n AS x SET x.s.t.v = 9, x.s.a = -x.s.a WHERE id = 3
    struct = _struct(rows[3])
    _nested(struct)["v"] = 9
    struct["a"] = -struct["a"]


UPDATES: list[tuple[str, Callable[[Rows], None]]] = [
    ("UPDATE n SET s.a = 100 WHERE id = 1", _update_one),
    (
        "UPDATE n SET n.s.t.u = s.a + 1, s.b = upper(s.b), `dot.col` = 0 WHERE id <= 2",
        _update_deep,
    ),
    ("UPDATE n AS x SET x.s.t.v = 9, x.s.a = -x.s.a WHERE id = 3", _update_alias),
]


@pytest.mark.parametrize("dv", ["true", "false"])
def test_update_assigns_struct_fields(s: txsql.Session, dv: str) -> None:
    s.sql(DDL.format(dv=dv))
    s.sql(INSERT)
    expected = copy.deepcopy(ROWS)
    _check(s, expected)
    for statement, change in UPDATES:
        s.sql(statement)
        change(expected)
        _check(s, expected)


def test_merge_assigns_struct_fields_and_dotted_columns(s: txsql.Session) -> None:
    s.sql(DDL.format(dv="true"))
    s.sql(INSERT)
    s.sql(
        "MERGE INTO n t USING (SELECT 1 AS k, 'm' AS b UNION ALL SELECT 2, 'p' "
        "UNION ALL SELECT 4, 'q') src ON t.id = src.k "
        "WHEN MATCHED AND t.id = 1 THEN UPDATE SET t.s.b = src.b, t.`dot.col` = 8, "
        "t.s.t.v = t.s.t.v * 2 "
        "WHEN MATCHED THEN UPDATE SET s.a = 42, t.`dot.col` = t.`dot.col` + 1 "
        "WHEN NOT MATCHED THEN INSERT (id, `dot.col`) VALUES (src.k, 4)"
    )
    expected = copy.deepcopy(ROWS)
    expected[1]["s"].update(b="m")
    expected[1]["s"]["t"]["v"] = 40
    expected[1]["dot.col"] = 8
    expected[2] = {"s": {"a": 42, "b": None, "t": None}, "dot.col": 7}
    expected[4] = {"s": None, "dot.col": 4}
    _check(s, expected)


CONFLICTS: list[tuple[str, type[TxSqlError], str]] = [
    ("UPDATE n SET s = NULL, s.a = 1", SchemaError, "conflicting SET targets s and s.a"),
    (
        "UPDATE n SET s.t.u = 1, n.s.t = NULL",
        SchemaError,
        "conflicting SET targets s.t.u and n.s.t",
    ),
    ("UPDATE n SET s.a = 1, n.S.A = 2", SchemaError, "s.a is assigned twice"),
    ("UPDATE n SET s.a = 1, S.A = 2", SqlError, "S.A is assigned twice"),
    ("UPDATE n SET s.zz = 1", SchemaError, "s has no field zz"),
    ("UPDATE n SET id.x = 1", SchemaError, "cannot assign id.x: id is INTEGER, not a STRUCT"),
    ("UPDATE n SET q.a = 1", SchemaError, "no column named q.a"),
    (
        "MERGE INTO n t USING (SELECT 1 AS k) src ON t.id = src.k "
        "WHEN MATCHED THEN UPDATE SET t.s = NULL, t.s.b = 'z'",
        SchemaError,
        "WHEN MATCHED clause 1: conflicting SET targets t.s and t.s.b",
    ),
]


def test_conflicting_or_unknown_targets_are_refused_and_change_nothing(s: txsql.Session) -> None:
    s.sql(DDL.format(dv="true"))
    s.sql(INSERT)
    version = s.table("n").version()
    for statement, error_type, message in CONFLICTS:
        with pytest.raises(error_type) as caught:
            s.sql(statement)
        assert message in caught.value.message, statement
        assert caught.value.hint, statement
    assert s.table("n").version() == version
    _check(s, ROWS)
