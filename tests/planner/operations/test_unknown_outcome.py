"""A commit whose put fails midway (the object store timed out after it stored the commit)
may have landed: the statement fails, but every file the commit may name must stay.

The injected fault writes the commit, then raises, as a store whose response was lost
would. Oracles: DuckDB's delta_scan and deltalake read the table afterwards; they fail
on a missing data file, and their rows must be the statement's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import StorageWriteError
from txsql.storage.logstore import LogStore

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def lost_response(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next commit is stored, and then its put raises (once)."""
    real = LogStore.write_if_absent
    armed = [True]

    def write_then_fail(store: LogStore, version: int, data: bytes) -> None:
        real(store, version, data)
        if armed[0]:
            armed[0] = False
            raise StorageWriteError("the connection dropped after the commit was stored")

    monkeypatch.setattr(LogStore, "write_if_absent", write_then_fail)


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE src (id INT, v STRING)")
    s.sql("INSERT INTO src VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    return s


def _read_everywhere(path: Path, absolute_paths: bool) -> list[tuple[Any, ...]]:
    latest = max(int(p.stem) for p in (path / "_delta_log").glob("*.json"))
    rows = deltalake_rows(str(path), latest, "id, v")
    if not absolute_paths:  # DuckDB cannot open a shallow clone's absolute file URIs
        assert duckdb_rows(str(path), latest, "id, v") == rows
    return rows


EXPECTED = [(1, "a"), (2, "b"), (3, "c")]


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE t AS SELECT * FROM src",
        "CREATE OR REPLACE TABLE src AS SELECT * FROM src",
        "CREATE TABLE t DEEP CLONE src",
        "CREATE TABLE t SHALLOW CLONE src",
    ],
)
def test_a_statement_whose_commit_may_have_landed_keeps_its_files(
    session: txsql.Session, tmp_path: Path, statement: str, lost_response: None
) -> None:
    with pytest.raises(StorageWriteError):
        session.sql(statement)
    name = "src" if "REPLACE" in statement else "t"
    # It did land: every file it names is still there, so other readers see its rows.
    assert _read_everywhere(tmp_path / name, "SHALLOW" in statement) == EXPECTED
