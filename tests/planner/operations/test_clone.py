"""CREATE TABLE ... SHALLOW CLONE: a new log over the source's files.

Oracles: the deltalake package reads the clone (absolute file URIs, absolute 'p' DV
descriptors) and DuckDB's delta_scan the source; the commit is read straight from the JSON
log. DuckDB cannot read shallow clones at all: it prepends the table root to every add
path (duckdb/duckdb-delta issue #74), so it is no oracle for the clone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError, TableExistsError, TableNotFoundError

pytestmark = [pytest.mark.spark]

SRC_ROWS_V2 = [(1, "a"), (3, "b")]  # version 2 of src: id 2 deleted through a DV


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE src (id INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO src VALUES (1, 'a'), (2, 'a'), (3, 'b')")  # v1
    s.sql("DELETE FROM src WHERE id = 2")  # v2: a 'u' deletion vector next to src
    s.sql("INSERT INTO src VALUES (4, 'c')")  # v3
    return s


def rows(s: txsql.Session, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(sql).df.collect())


def commit_actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def files_under(root: Path) -> set[str]:
    return {
        str(p)
        for p in root.rglob("*")
        if p.is_file() and "_delta_log" not in p.parts and "_txsql_clones" not in p.parts
    }


def test_clone_commit_matches_delta_and_readers_agree(session: txsql.Session) -> None:
    warehouse = Path(session.warehouse)
    result = session.sql("CREATE TABLE c SHALLOW CLONE src VERSION AS OF 2")
    assert (result.operation, result.version) == ("CLONE", 0)
    actions = commit_actions(warehouse / "c", 0)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "CLONE"
    assert info["operationParameters"] == {
        "source": "src",
        "sourceVersion": "2",
        "isShallow": "true",
    }
    src_meta = next(a["metaData"] for a in commit_actions(warehouse / "src", 0) if "metaData" in a)
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert meta["id"] != src_meta["id"]
    assert meta["schemaString"] == src_meta["schemaString"]
    assert meta["partitionColumns"] == ["p"]
    adds = [a["add"] for a in actions if "add" in a]
    assert len(adds) == 2
    assert all(a["path"].startswith("file:///") and "/src/" in a["path"] for a in adds)
    dvs = [a["deletionVector"] for a in adds if a.get("deletionVector")]
    assert [d["storageType"] for d in dvs] == ["p"]
    assert dvs[0]["pathOrInlineDv"].startswith("file:///")
    # Independent readers see version 2 of the source through the clone.
    assert duckdb_rows(str(warehouse / "src"), 2, "id, p") == SRC_ROWS_V2
    assert deltalake_rows(str(warehouse / "c"), 0, "id, p") == SRC_ROWS_V2
    assert rows(session, "SELECT * FROM c") == SRC_ROWS_V2
    assert len(os.listdir(warehouse / "src" / "_txsql_clones")) == 1


def test_dml_on_the_clone_writes_only_under_the_clone(session: txsql.Session) -> None:
    warehouse = Path(session.warehouse)
    src_files = files_under(warehouse / "src")
    session.sql("CREATE TABLE c SHALLOW CLONE src")
    session.sql("DELETE FROM c WHERE id = 1")
    session.sql("UPDATE c SET id = 30 WHERE id = 3")
    session.sql("INSERT INTO c VALUES (5, 'a')")
    assert files_under(warehouse / "src") == src_files
    expected = [(4, "c"), (5, "a"), (30, "b")]
    version = session.table("c").version()
    assert rows(session, "SELECT * FROM c") == expected
    assert deltalake_rows(str(warehouse / "c"), version, "id, p") == expected
    assert rows(session, "SELECT * FROM src") == [(1, "a"), (3, "b"), (4, "c")]


def test_vacuum_on_either_side_keeps_the_other_readable(session: txsql.Session) -> None:
    warehouse = Path(session.warehouse)
    session.sql("CREATE TABLE c SHALLOW CLONE src")
    clone_rows = rows(session, "SELECT * FROM c")
    # The source drops every file the clone references, then vacuums with no retention.
    session.sql("INSERT OVERWRITE src VALUES (9, 'z')")
    short = "SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 1 second')"
    session.sql(f"ALTER TABLE src {short}")
    session.sql(f"ALTER TABLE c {short}")
    time.sleep(1.2)
    session.sql("VACUUM src")
    version = session.table("c").version()
    assert deltalake_rows(str(warehouse / "c"), version, "id, p") == clone_rows
    assert rows(session, "SELECT * FROM c") == clone_rows
    # The clone's VACUUM never deletes the source's files.
    session.sql("DELETE FROM c")
    time.sleep(1.2)
    before = files_under(warehouse / "src")
    session.sql("VACUUM c")
    assert files_under(warehouse / "src") == before
    assert rows(session, "SELECT * FROM src VERSION AS OF 3") == [(1, "a"), (3, "b"), (4, "c")]
    # Once the clone is gone (and its entry is old), the source's VACUUM reclaims them.
    entry = next((warehouse / "src" / "_txsql_clones").iterdir())
    body = json.loads(entry.read_text())
    entry.write_text(json.dumps({**body, "createdTime": 0}))
    for path in sorted((warehouse / "c").rglob("*"), key=lambda p: -len(p.parts)):
        path.unlink() if path.is_file() else path.rmdir()
    session.sql("VACUUM src")
    left = files_under(warehouse / "src")
    assert left and all("p=z" in p for p in left)


def test_deep_clone_copies_the_files(session: txsql.Session) -> None:
    warehouse = Path(session.warehouse)
    src_files = files_under(warehouse / "src")
    result = session.sql("CREATE TABLE d DEEP CLONE src VERSION AS OF 2")
    assert (result.operation, result.version) == ("CLONE", 0)
    actions = commit_actions(warehouse / "d", 0)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operationParameters"]["isShallow"] == "false"
    assert info["operationMetrics"]["numCopiedFiles"] == "2"
    adds = [a["add"] for a in actions if "add" in a]
    assert not any(a["path"].startswith(("file:", "/")) for a in adds)
    assert [a["deletionVector"]["storageType"] for a in adds if a.get("deletionVector")] == ["u"]
    assert not (warehouse / "src" / "_txsql_clones").exists()
    assert files_under(warehouse / "src") == src_files
    # Readers see the source's version 2; DuckDB too, since every path is relative.
    assert duckdb_rows(str(warehouse / "d"), 0, "id, p") == SRC_ROWS_V2
    assert deltalake_rows(str(warehouse / "d"), 0, "id, p") == SRC_ROWS_V2
    session.sql("DELETE FROM src")
    session.sql("DELETE FROM d WHERE id = 1")
    assert rows(session, "SELECT * FROM d") == [(3, "b")]


def test_clone_variants_and_errors(session: txsql.Session, tmp_path: Path) -> None:
    warehouse = Path(session.warehouse)
    with pytest.raises(TableNotFoundError):
        session.sql("REPLACE TABLE d SHALLOW CLONE src")
    with pytest.raises(SchemaError, match="inside"):
        session.sql(f"CREATE TABLE d SHALLOW CLONE src LOCATION '{warehouse / 'src' / 'x'}'")
    assert not (warehouse / "d").exists()
    session.sql("CREATE TABLE c SHALLOW CLONE src VERSION AS OF 1")
    with pytest.raises(TableExistsError):
        session.sql("CREATE TABLE c SHALLOW CLONE src")
    skipped = session.sql("CREATE TABLE IF NOT EXISTS c SHALLOW CLONE src")
    assert skipped.version == 0
    c_id = next(a["metaData"]["id"] for a in commit_actions(warehouse / "c", 0) if "metaData" in a)
    replaced = session.sql(
        "CREATE OR REPLACE TABLE c SHALLOW CLONE src TBLPROPERTIES ('owner' = 'me')"
    )
    assert replaced.version == 1
    meta = next(a["metaData"] for a in commit_actions(warehouse / "c", 1) if "metaData" in a)
    assert meta["id"] == c_id and meta["configuration"]["owner"] == "me"
    assert rows(session, "SELECT * FROM c") == [(1, "a"), (3, "b"), (4, "c")]
    assert rows(session, "SELECT * FROM c VERSION AS OF 0") == [(1, "a"), (2, "a"), (3, "b")]
    elsewhere = tmp_path / "elsewhere" / "e"
    session.sql(f"CREATE TABLE e SHALLOW CLONE delta.`{warehouse / 'src'}` LOCATION '{elsewhere}'")
    assert deltalake_rows(str(elsewhere), 0, "id, p") == [(1, "a"), (3, "b"), (4, "c")]
