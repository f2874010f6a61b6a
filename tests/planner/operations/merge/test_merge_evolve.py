"""MERGE WITH SCHEMA EVOLUTION and the autoMerge session conf.

Oracles: DuckDB's delta_scan and the deltalake package read the evolved version; the
schema change is read straight from the commit's JSON (one metaData in the MERGE commit).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.planner.operations.merge.evolve import AUTO_MERGE_CONF

pytestmark = [pytest.mark.spark]

SOURCE = "(SELECT * FROM VALUES (1, 'A', 'x1'), (3, 'c', 'x3') AS v(id, v, extra)) AS s"
STAR_MERGE = (
    f"INTO t USING {SOURCE} ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)
EVOLVED = [(1, "A", "x1"), (2, "b", None), (3, "c", "x3")]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, v STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")  # v1
    return s


def rows(s: txsql.Session, sql: str = "SELECT * FROM t") -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in s.sql(sql).df.collect()), key=repr)


def commit_actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def check_evolved(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "t"
    actions = commit_actions(root, 2)
    metadata = [a["metaData"] for a in actions if "metaData" in a]
    assert len(metadata) == 1
    fields = json.loads(metadata[0]["schemaString"])["fields"]
    assert [(f["name"], f["type"], f["nullable"]) for f in fields][-1] == ("extra", "string", True)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "MERGE"
    assert rows(session) == sorted(EVOLVED, key=repr)
    assert duckdb_rows(str(root), 2, "id, v, extra") == sorted(EVOLVED, key=repr)
    assert deltalake_rows(str(root), 2, "id, v, extra") == sorted(EVOLVED, key=repr)
    assert rows(session, "SELECT * FROM t VERSION AS OF 1") == [(1, "a"), (2, "b")]


def test_with_schema_evolution_adds_the_source_columns(session: txsql.Session) -> None:
    result = session.sql(f"MERGE WITH SCHEMA EVOLUTION {STAR_MERGE}")
    assert result.version == 2
    check_evolved(session)


def test_auto_merge_conf_turns_it_on(session: txsql.Session) -> None:
    session.spark.conf.set(AUTO_MERGE_CONF, "true")
    try:
        session.sql(f"MERGE {STAR_MERGE}")
    finally:
        session.spark.conf.set(AUTO_MERGE_CONF, "false")
    check_evolved(session)


def test_without_evolution_the_schema_stays(session: txsql.Session) -> None:
    session.sql(f"MERGE {STAR_MERGE}")
    root = Path(session.warehouse) / "t"
    assert not [a for a in commit_actions(root, 2) if "metaData" in a]
    assert rows(session) == [(1, "A"), (2, "b"), (3, "c")]
    # Explicit assignments never evolve the schema, even WITH SCHEMA EVOLUTION.
    session.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO t USING {SOURCE} ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id + 10, s.v)"
    )
    assert [f.name for f in session.sql("SELECT * FROM t").df.schema.fields] == ["id", "v"]


def test_evolving_a_timestamp_ntz_column_lists_its_feature(session: txsql.Session) -> None:
    r = session.sql(
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (SELECT 3 AS id, 'c' AS v, "
        "TIMESTAMP_NTZ'2024-01-01 00:00:00' AS t) AS s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    assert "protocol upgraded" in r.message and "timestampNtz" in r.message
    root = Path(session.warehouse) / "t"
    actions = commit_actions(root, 2)
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    assert "timestampNtz" in protocol["readerFeatures"]
    assert "timestampNtz" in protocol["writerFeatures"]
    expected = [(1, "a", True), (2, "b", True), (3, "c", False)]
    assert duckdb_rows(str(root), 2, "id, v, t IS NULL") == expected
    assert deltalake_rows(str(root), 2, "id, v, t IS NULL") == expected
