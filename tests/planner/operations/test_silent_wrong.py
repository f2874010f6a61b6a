"""Statements that used to give a wrong answer without a word (issue 12).

``t@v1`` must read version 1 (sqlglot alone reads ``@v1`` as an alias of the latest
version), ``CREATE OR REPLACE`` must replace (not be taken for CREATE), and column clauses
txsql does not apply (column CHECK, keys) must be refused, not dropped (GENERATED, IDENTITY
and DEFAULT are applied now: tests/planner/test_column_rules_sql.py). Oracles: DuckDB's
delta_scan at the version, and the commit timestamp read straight from the JSON log.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import SchemaError, SqlError, UnsupportedStatementError

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE people (id INT, name STRING)")  # version 0
    s.sql("INSERT INTO people VALUES (1, 'ann'), (2, 'bob')")  # version 1
    s.sql("INSERT INTO people VALUES (3, 'cy')")  # version 2
    return s


def rows(s: txsql.Session, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(sql).df.collect())


def commit_stamp(table_root: Path, version: int) -> str:
    """The ``yyyyMMddHHmmssSSS`` form of a version's commitInfo timestamp (UTC)."""
    log = table_root / "_delta_log" / f"{version:020d}.json"
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            millis = int(action["commitInfo"]["timestamp"])
            moment = dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc)
            return moment.strftime("%Y%m%d%H%M%S") + f"{millis % 1000:03d}"
    raise AssertionError(f"no commitInfo in {log}")


def test_at_version_reads_that_version(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "people"
    expected = duckdb_rows(str(root), 1, "id, name")
    assert expected == [(1, "ann"), (2, "bob")]
    assert rows(session, "SELECT id, name FROM people@v1") == expected
    assert rows(session, "SELECT id, name FROM people VERSION AS OF 1") == expected
    assert rows(session, "SELECT p.id, p.name FROM people@v1 AS p") == expected
    assert rows(session, f"SELECT id, name FROM delta.`{root}`@v1") == expected
    assert session.sql("SELECT * FROM people@v1").version == 1
    # the latest version is still what a plain name reads
    assert len(rows(session, "SELECT id FROM people")) == 3


def test_at_version_in_insert_select_and_merge_source(session: txsql.Session) -> None:
    session.sql("CREATE TABLE copy (id INT, name STRING)")
    session.sql("INSERT INTO copy SELECT * FROM people@v1")
    assert rows(session, "SELECT id, name FROM copy") == [(1, "ann"), (2, "bob")]
    session.sql("MERGE INTO copy c USING people@v2 p ON c.id = p.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT id, name FROM copy") == rows(session, "SELECT * FROM people")


def test_at_timestamp_reads_the_version_of_that_time(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "people"
    stamp = commit_stamp(root, 1)
    at = rows(session, f"SELECT id, name FROM people@{stamp}")
    assert at == duckdb_rows(str(root), 1, "id, name")
    iso = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]}"
    as_of = rows(session, f"SELECT id, name FROM people TIMESTAMP AS OF '{iso}.{stamp[14:]}'")
    assert at == as_of


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM people@latest",
        "SELECT * FROM people@2024",  # not 17 digits
        "SELECT * FROM people@v1 VERSION AS OF 2",
        "SELECT id@x FROM people",
    ],
)
def test_other_at_forms_are_refused(session: txsql.Session, sql: str) -> None:
    with pytest.raises(SqlError, match=r"@|AS OF"):
        session.sql(sql)


def test_at_version_is_no_write_target(session: txsql.Session) -> None:
    with pytest.raises(SchemaError, match="time-travel"):
        session.sql("INSERT INTO people@v1 VALUES (9, 'zed')")
    for sql in ("CREATE TABLE other@v1 (a INT)", "DESCRIBE HISTORY people@v1"):
        with pytest.raises(SqlError, match="time-travel"):
            session.sql(sql)
    assert not (Path(session.warehouse) / "other").exists()
    assert len(rows(session, "SELECT id FROM people")) == 3


@pytest.mark.parametrize(
    ("sql", "operation"),
    [
        ("CREATE OR REPLACE TABLE people (id INT)", "CREATE OR REPLACE TABLE"),
        ("CREATE OR REPLACE TABLE people AS SELECT 1 AS id", "CREATE OR REPLACE TABLE AS SELECT"),
        ("REPLACE TABLE people (id INT)", "REPLACE TABLE"),
    ],
)
def test_replace_is_a_real_replace_not_a_create(
    session: txsql.Session, sql: str, operation: str
) -> None:
    before = rows(session, "SELECT * FROM people")
    history = len(session.sql("DESCRIBE HISTORY people").df.collect())
    assert session.sql(sql).operation == operation
    assert len(session.sql("DESCRIBE HISTORY people").df.collect()) == history + 1
    assert rows(session, "SELECT * FROM people") != before
    assert rows(session, f"SELECT * FROM people VERSION AS OF {history - 1}") == before


@pytest.mark.parametrize(
    ("column", "clause"),
    [
        ("b INT CHECK (b > 0)", "CHECK"),
        ("b INT PRIMARY KEY", "PRIMARY KEY"),
        ("CONSTRAINT pk PRIMARY KEY (a)", "PRIMARY KEY"),
        ("CHECK (a > 0)", "CHECK"),
    ],
)
def test_unapplied_column_clauses_are_refused(
    session: txsql.Session, column: str, clause: str
) -> None:
    with pytest.raises(UnsupportedStatementError, match=clause) as raised:
        session.sql(f"CREATE TABLE g (a INT, {column})")
    assert raised.value.hint
    assert not (Path(session.warehouse) / "g").exists()
    if not column.startswith(("CONSTRAINT", "CHECK")):
        with pytest.raises(UnsupportedStatementError, match=clause):
            session.sql(f"ALTER TABLE people ADD COLUMNS ({column.replace('a * 2', 'id')})")
        assert [f.name for f in session.sql("SELECT * FROM people").df.schema.fields] == [
            "id",
            "name",
        ]


def test_not_null_and_comment_still_work(session: txsql.Session) -> None:
    session.sql("CREATE TABLE n (a INT NOT NULL COMMENT 'key', b STRING)")
    assert (Path(session.warehouse) / "n").exists()  # where a refused `g` would have gone
    field = session.sql("SELECT * FROM n").df.schema.fields[0]
    assert not field.nullable
    assert field.metadata.get("comment") == "key"
