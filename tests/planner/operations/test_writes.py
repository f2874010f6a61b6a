"""CREATE TABLE [AS SELECT]: column types list their table features in version 0.

Oracle: DuckDB's delta extension refuses a TIMESTAMP_NTZ table whose protocol lacks
``timestampNtz``; it must read what txsql creates. Types txsql cannot store as Delta
requires are refused by name, and nothing is left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError, UnsupportedStatementError

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def protocol(root: Path, version: int = 0) -> dict[str, Any]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return next(json.loads(line)["protocol"] for line in text.splitlines() if "protocol" in line)


@pytest.mark.parametrize(
    "columns",
    [
        "id INT, t TIMESTAMP_NTZ",
        "id INT, s STRUCT<a: INT, t: TIMESTAMP_NTZ>",
        "id INT, a ARRAY<TIMESTAMP_NTZ>",
        "id INT, m MAP<STRING, TIMESTAMP_NTZ>",
    ],
)
def test_create_lists_timestamp_ntz_wherever_the_type_is(
    session: txsql.Session, columns: str
) -> None:
    result = session.sql(f"CREATE TABLE n ({columns})")
    root = Path(session.warehouse) / "n"
    p = protocol(root)
    assert "timestampNtz" in p["readerFeatures"] and "timestampNtz" in p["writerFeatures"]
    assert "table feature timestampNtz" in result.message
    session.sql("INSERT INTO n SELECT 1, NULL")
    assert duckdb_rows(str(root), 1, "id") == [(1,)]
    assert deltalake_rows(str(root), 1, "id") == [(1,)]


def test_ctas_and_legacy_protocol_get_the_feature_too(session: txsql.Session) -> None:
    session.sql(
        "CREATE TABLE n TBLPROPERTIES ('delta.enableDeletionVectors' = 'false') AS "
        "SELECT 1 AS id, TIMESTAMP_NTZ'2024-01-01 00:00:00.123456' AS t"
    )
    root = Path(session.warehouse) / "n"
    p = protocol(root)
    assert (p["minReaderVersion"], p["minWriterVersion"]) == (3, 7)
    assert p["readerFeatures"] == ["timestampNtz"]
    assert p["writerFeatures"] == ["appendOnly", "invariants", "timestampNtz"]
    assert duckdb_rows(str(root), 0, "id, CAST(t AS VARCHAR)") == [
        (1, "2024-01-01 00:00:00.123456")
    ]


@pytest.mark.parametrize(
    ("statement", "error", "words"),
    [
        ("CREATE TABLE x AS SELECT 1 AS id, NULL AS n", SchemaError, "VOID"),
        ("CREATE TABLE x (i INTERVAL DAY TO SECOND)", SchemaError, "INTERVAL"),
        ("CREATE TABLE x (id INT, t TIME)", UnsupportedStatementError, "TIME"),
        ("CREATE TABLE x (id INT, s STRUCT<t: TIME>)", UnsupportedStatementError, "TIME"),
    ],
)
def test_types_txsql_cannot_store_are_refused_and_nothing_is_left(
    session: txsql.Session, statement: str, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        session.sql(statement)
    root = Path(session.warehouse) / "x"
    assert not (root / "_delta_log").exists()
    assert not list(root.glob("*.parquet")) if root.exists() else True
