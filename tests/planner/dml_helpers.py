"""Helpers for the DELETE/UPDATE tests: DuckDB as the oracle, independent Delta readers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows


def table_rows(s: txsql.Session, table: str, columns: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(f"SELECT {columns} FROM {table}").df.collect())


def oracle(
    ddl: str, columns: str, rows: list[tuple[Any, ...]], statement: str
) -> list[tuple[Any, ...]]:
    """Run ``statement`` with DuckDB on a plain in-memory table ``t`` holding ``rows``."""
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE t ({ddl})")
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            con.executemany(f"INSERT INTO t VALUES ({marks})", rows)
        con.execute(statement)
        return sorted(con.execute(f"SELECT {columns} FROM t").fetchall())
    finally:
        con.close()


def check_against_duckdb(s: txsql.Session, ddl: str, columns: str, statement: str) -> txsql.Result:
    """Run ``statement`` on table ``t`` with txsql and DuckDB; the contents must agree.

    Also checks that DuckDB's delta_scan and deltalake read the new version like txsql.
    """
    before = table_rows(s, "t", columns)
    result = s.sql(statement)
    after = table_rows(s, "t", columns)
    assert after == oracle(ddl, columns, before, statement), statement
    assert_readers_agree(s, "t", columns, after)
    return result


def assert_readers_agree(
    s: txsql.Session, table: str, columns: str, expected: list[tuple[Any, ...]]
) -> None:
    handle = s.table(table)
    path, version = handle.location, handle.version()
    assert duckdb_rows(path, version, columns) == expected
    assert deltalake_rows(path, version, columns) == expected


def commit(s: txsql.Session, table: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file of ``table``."""
    log = Path(s.table(table).location) / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in log.read_text().splitlines()]


def files(s: txsql.Session, table: str, suffix: str) -> set[str]:
    """Every file under the table root ending in ``suffix`` (relative paths)."""
    root = s.table(table).location
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(suffix):
                found.add(os.path.relpath(os.path.join(folder, name), root))
    return found
