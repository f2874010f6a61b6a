"""SQL fuzz: random statements from a small grammar, txsql vs. DuckDB on the same rows.

The table has helper-like column names (``_file``, ``_txsql_fk``) next to ordinary ones,
NULLs and edge values. Each generated statement (DELETE / UPDATE / INSERT / SELECT with
nested predicates) runs on txsql and on a plain in-memory DuckDB table holding the same
rows; after every statement the full table contents must agree. A statement may instead
fail, but only with a typed txsql error, and then the table must be exactly as before (same
version, same rows). DuckDB shares no code with txsql, so it is an independent oracle.

Seeded and small by default (CI); a longer run: ``TXSQL_FUZZ_N=200 TXSQL_FUZZ_SEED=7
python -m pytest -q tests/test_sql_fuzz.py``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

import txsql
from txsql.errors import TxSqlError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

N = int(os.environ.get("TXSQL_FUZZ_N", "8"))
SEED = int(os.environ.get("TXSQL_FUZZ_SEED", "20261124"))
# (name, SQL type, literal pool). NULL is in every pool.
INTS = ["0", "1", "-1", "7", "2147483647", "-2147483648", "NULL"]
STRS = ["''", "'a'", "'b c'", "'Z'", "'a''b'", "'é'", "NULL"]
COLUMNS = [
    ("id", "INT", INTS),
    ("a", "INT", INTS),
    ("_file", "INT", INTS),
    ("b", "STRING", STRS),
    ("_txsql_fk", "STRING", STRS),
]
ROWS = [
    (1, 0, 5, "a", "x"),
    (2, None, -1, "", None),
    (3, 2147483647, None, "b c", "_file"),
    (4, -2147483648, 0, None, ""),
    (5, 7, 7, "a'b", "é"),
    (6, 1, 2, "Z", "a"),
]

Quote = Callable[[str], str]
# Spark SQL reads 'a''b' as two adjacent literals ('ab'); its escape is a backslash.
DUCK_APOSTROPHE = "'a''b'"
SPARK_APOSTROPHE = "'a\\'b'"


def for_spark(sql: str) -> str:
    return sql.replace(DUCK_APOSTROPHE, SPARK_APOSTROPHE)


def spark_quote(name: str) -> str:
    return f"`{name}`"


def duck_quote(name: str) -> str:
    return f'"{name}"'


@dataclass(frozen=True)
class Statement:
    """One generated statement, rendered per engine (identifier quoting differs)."""

    render: Callable[[Quote], str]
    is_query: bool = False


class Grammar:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def column(self, kind: str | None = None) -> tuple[str, str, list[str]]:
        pool = [c for c in COLUMNS if kind is None or c[1] == kind]
        return self.rng.choice(pool)

    def predicate(self, depth: int) -> Callable[[Quote], str]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            return self.atom()
        choice = rng.choice(["and", "or", "not", "paren", "chain"])
        left, right = self.predicate(depth - 1), self.predicate(depth - 1)
        if choice == "and":
            return lambda q: f"({left(q)} AND {right(q)})"
        if choice == "or":
            return lambda q: f"({left(q)} OR {right(q)})"
        if choice == "not":
            return lambda q: f"NOT ({left(q)})"
        if choice == "paren":
            return lambda q: f"(({left(q)}))"
        terms = [self.atom() for _ in range(rng.randint(3, 12))]
        return lambda q: "(" + " OR ".join(t(q) for t in terms) + ")"

    def atom(self) -> Callable[[Quote], str]:
        rng = self.rng
        name, _, pool = self.column()
        form = rng.choice(["cmp", "cmp", "null", "notnull", "in", "between", "cols"])
        if form == "cmp":
            op = rng.choice(["=", "<>", "<", "<=", ">", ">="])
            value = rng.choice(pool)
            return lambda q: f"{q(name)} {op} {value}"
        if form == "null":
            return lambda q: f"{q(name)} IS NULL"
        if form == "notnull":
            return lambda q: f"{q(name)} IS NOT NULL"
        if form == "in":
            values = ", ".join(rng.sample(pool, rng.randint(1, 3)))
            negate = rng.choice(["", "NOT "])
            return lambda q: f"{q(name)} {negate}IN ({values})"
        if form == "between":
            low, high = sorted(rng.sample([v for v in pool if v != "NULL"], 2))
            return lambda q: f"{q(name)} BETWEEN {low} AND {high}"
        other, _, _ = self.column(self.column_type(name))
        op = rng.choice(["=", "<", ">="])
        return lambda q: f"{q(name)} {op} {q(other)}"

    @staticmethod
    def column_type(name: str) -> str:
        return next(t for n, t, _ in COLUMNS if n == name)

    def value_for(self, name: str) -> Callable[[Quote], str]:
        rng = self.rng
        kind = self.column_type(name)
        pool = next(p for n, _, p in COLUMNS if n == name)
        form = rng.choice(["literal", "column", "expr"])
        if form == "literal":
            value = rng.choice(pool)
            return lambda q: value
        other, _, _ = self.column(kind)
        if form == "column":
            return lambda q: q(other)
        if kind == "INT":  # may overflow: both engines must then fail
            step = rng.choice(["1", "-1", "2"])
            return lambda q: f"{q(other)} + {step}"
        return lambda q: f"COALESCE({q(other)}, {rng.choice(pool[:-1])})"

    def statement(self) -> Statement:
        rng = self.rng
        where = self.predicate(rng.randint(1, 4))
        kind = rng.choice(["delete", "update", "update", "insert", "select"])
        if kind == "delete":
            return Statement(lambda q: f"DELETE FROM fz WHERE {where(q)}")
        if kind == "update":
            targets = rng.sample([c[0] for c in COLUMNS], rng.randint(1, 2))
            values = [(t, self.value_for(t)) for t in targets]
            return Statement(
                lambda q: (
                    "UPDATE fz SET "
                    + ", ".join(f"{q(t)} = {v(q)}" for t, v in values)
                    + f" WHERE {where(q)}"
                )
            )
        if kind == "insert":
            rows = [
                "(" + ", ".join(rng.choice(pool) for _, _, pool in COLUMNS) + ")"
                for _ in range(rng.randint(1, 3))
            ]
            return Statement(lambda q: f"INSERT INTO fz VALUES {', '.join(rows)}")
        return Statement(
            lambda q: f"SELECT {q('_file')}, {q('_txsql_fk')}, id FROM fz WHERE {where(q)}",
            is_query=True,
        )


def _all_columns(q: Quote) -> str:
    return ", ".join(q(name) for name, _, _ in COLUMNS)


def _txsql_rows(s: txsql.Session) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(r) for r in s.sql(f"SELECT {_all_columns(spark_quote)} FROM fz").df.collect()),
        key=repr,
    )


def _duck_rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in con.execute(sql).fetchall()), key=repr)


@pytest.fixture()
def tables(spark: SparkSession, tmp_path: Path) -> tuple[txsql.Session, duckdb.DuckDBPyConnection]:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    ddl = ", ".join(f"{spark_quote(n)} {t}" for n, t, _ in COLUMNS)
    s.sql(f"CREATE TABLE fz ({ddl}) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE fz ("
        + ", ".join(f"{duck_quote(n)} {'VARCHAR' if t == 'STRING' else t}" for n, t, _ in COLUMNS)
        + ")"
    )
    con.executemany("INSERT INTO fz VALUES (?, ?, ?, ?, ?)", ROWS)
    literal: dict[object, str] = {None: "NULL"}
    values = ", ".join(
        "("
        + ", ".join(
            literal.get(v, repr(v) if isinstance(v, int) else "'" + str(v).replace("'", "''") + "'")
            for v in row
        )
        + ")"
        for row in ROWS
    )
    s.sql(for_spark(f"INSERT INTO fz VALUES {values}"))
    return s, con


def test_statements_agree_with_duckdb(
    tables: tuple[txsql.Session, duckdb.DuckDBPyConnection],
) -> None:
    s, con = tables
    grammar = Grammar(random.Random(SEED))
    everything = f"SELECT {_all_columns(duck_quote)} FROM fz"
    assert _txsql_rows(s) == _duck_rows(con, everything)
    outcomes = {"agreed": 0, "typed error": 0}
    for i in range(N):
        statement = grammar.statement()
        spark_sql = for_spark(statement.render(spark_quote))
        duck_sql = statement.render(duck_quote)
        before_version = s.table("fz").version()
        before = _duck_rows(con, everything)
        try:
            result = s.sql(spark_sql)
            got = _duck_rows_of(result) if statement.is_query else None
        except TxSqlError:
            # Allowed only if nothing changed; DuckDB keeps its rows too.
            assert s.table("fz").version() == before_version, spark_sql
            assert _txsql_rows(s) == before, spark_sql
            outcomes["typed error"] += 1
            continue
        if statement.is_query:
            assert got == _duck_rows(con, duck_sql), f"#{i}: {spark_sql}"
        else:
            con.execute(duck_sql)  # txsql succeeded: DuckDB must succeed too
            assert _txsql_rows(s) == _duck_rows(con, everything), f"#{i}: {spark_sql}"
        outcomes["agreed"] += 1
    assert outcomes["agreed"] >= N // 2, outcomes  # the grammar mostly makes valid SQL


def _duck_rows_of(result: txsql.Result) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in result.df.collect()), key=repr)
