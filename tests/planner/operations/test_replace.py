"""CREATE OR REPLACE TABLE / REPLACE TABLE [AS SELECT]: a new version of the same table.

Oracles: DuckDB's delta_scan and the deltalake package read every version (the old rows
by time travel, the new schema at the latest); the commit's actions are read straight
from the JSON log file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import (
    ConcurrentAppendError,
    MetadataChangedError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    TransactionError,
)

pytestmark = [pytest.mark.spark]


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


def test_replace_as_select_is_a_new_version_of_the_same_table(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "t"
    before = commit_actions(root, 0)
    table_id = next(a["metaData"]["id"] for a in before if "metaData" in a)
    result = session.sql(
        "CREATE OR REPLACE TABLE t PARTITIONED BY (p) AS "
        "SELECT id * 10 AS id, 'x' AS p, true AS flag FROM t"
    )
    assert (result.operation, result.version) == ("CREATE OR REPLACE TABLE AS SELECT", 2)
    assert result.metrics["num_inserted_rows"] == 2
    actions = commit_actions(root, 2)
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    assert metadata["id"] == table_id
    assert metadata["partitionColumns"] == ["p"]
    assert [f["name"] for f in json.loads(metadata["schemaString"])["fields"]] == [
        "id",
        "p",
        "flag",
    ]
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    live_before = {a["add"]["path"] for a in commit_actions(root, 1) if "add" in a}
    assert removed == live_before
    assert all(a["remove"]["dataChange"] for a in actions if "remove" in a)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "CREATE OR REPLACE TABLE AS SELECT"
    # Independent readers: the new rows now, the old ones by time travel.
    new = [(10, "x", True), (20, "x", True)]
    assert duckdb_rows(str(root), 2, "id, p, flag") == new
    assert deltalake_rows(str(root), 2, "id, p, flag") == new
    assert duckdb_rows(str(root), 1, "id, v") == [(1, "a"), (2, "b")]
    assert rows(session) == new
    assert rows(session, "SELECT * FROM t VERSION AS OF 1") == [(1, "a"), (2, "b")]
    history = [r["operation"] for r in session.sql("DESCRIBE HISTORY t").df.collect()]
    assert history[0] == "CREATE OR REPLACE TABLE AS SELECT" and len(history) == 3


def test_replace_table_with_columns_and_missing_table(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "t"
    result = session.sql("REPLACE TABLE t (k BIGINT) TBLPROPERTIES ('owner' = 'me')")
    assert (result.operation, result.version) == ("REPLACE TABLE", 2)
    assert rows(session) == []
    assert duckdb_rows(str(root), 2, "count(*)") == [(0,)]
    detail = session.sql("DESCRIBE DETAIL t").df.collect()[0].asDict()
    assert detail["properties"]["owner"] == "me"
    with pytest.raises(TableNotFoundError) as missing:
        session.sql("REPLACE TABLE nope (k INT)")
    assert "CREATE OR REPLACE" in (missing.value.hint or "")
    assert not (Path(session.warehouse) / "nope").exists()
    created = session.sql("CREATE OR REPLACE TABLE fresh AS SELECT 1 AS k")
    assert (created.operation, created.version) == ("CREATE OR REPLACE TABLE AS SELECT", 0)
    assert rows(session, "SELECT * FROM fresh") == [(1,)]


def test_failed_replace_leaves_the_table_unchanged(session: txsql.Session) -> None:
    root = Path(session.warehouse) / "t"
    files = sorted(p.name for p in root.iterdir())
    with pytest.raises(SchemaError):
        session.sql("CREATE OR REPLACE TABLE t PARTITIONED BY (nope) AS SELECT 1 AS id")
    with pytest.raises(SchemaError, match="cannot move"):
        session.sql("CREATE OR REPLACE TABLE t (id INT) LOCATION '/tmp/elsewhere_txsql'")
    tx = session.begin()
    with pytest.raises(TransactionError):
        tx.sql("CREATE OR REPLACE TABLE t (id INT)")
    tx.rollback()
    assert sorted(p.name for p in root.iterdir()) == files
    assert rows(session) == [(1, "a"), (2, "b")]
    assert session.table("t").version() == 1


def test_concurrent_writer_loses_to_a_replace(session: txsql.Session) -> None:
    # Serial orders: insert then replace -> [(7,)]; replace then insert is impossible (the
    # insert's old-schema rows) -> the insert must fail, never land in the new table.
    tx = session.begin()
    tx.sql("INSERT INTO t VALUES (3, 'c')")
    session.sql("CREATE OR REPLACE TABLE t AS SELECT 7 AS k")
    with pytest.raises(MetadataChangedError):
        tx.commit()
    assert rows(session) == [(7,)]
    assert duckdb_rows(str(Path(session.warehouse) / "t"), 2, "k") == [(7,)]
    assert session.table("t").version() == 2


def test_replace_loses_to_a_blind_append_committed_meanwhile(
    session: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The INSERT commits after the replace pinned its snapshot and before it commits.
    # Under WriteSerializable a blind append would normally be ordered after us, but here
    # its old-schema file would survive the replace: the replace must fail instead.
    from txsql.planner.operations import replace as replace_module

    original = replace_module.query_dataframe

    def interleaved(*args: Any, **kwargs: Any) -> Any:
        session.sql("INSERT INTO t VALUES (3, 'c')")  # v2
        return original(*args, **kwargs)

    monkeypatch.setattr(replace_module, "query_dataframe", interleaved)
    with pytest.raises(ConcurrentAppendError):
        session.sql("CREATE OR REPLACE TABLE t AS SELECT 7 AS k")
    monkeypatch.undo()
    assert session.table("t").version() == 2
    assert rows(session) == [(1, "a"), (2, "b"), (3, "c")]
    root = Path(session.warehouse) / "t"
    assert duckdb_rows(str(root), 2, "id, v") == [(1, "a"), (2, "b"), (3, "c")]
    live = {a["add"]["path"] for v in (1, 2) for a in commit_actions(root, v) if "add" in a}
    data = {str(p.relative_to(root)) for p in root.rglob("*.parquet")}
    assert data == live  # the failed replace's files were deleted


def test_replace_never_touches_a_renamed_table_in_the_managed_place(
    session: txsql.Session,
) -> None:
    session.sql("ALTER TABLE t RENAME TO u")  # u's files stay at t's managed place
    with pytest.raises(TableNotFoundError):
        session.sql("REPLACE TABLE t (k INT)")
    with pytest.raises(TableExistsError):
        session.sql("CREATE OR REPLACE TABLE t AS SELECT 1 AS k")
    assert rows(session, "SELECT * FROM u") == [(1, "a"), (2, "b")]
    assert session.table("u").version() == 1


def test_replace_with_a_timestamp_ntz_column_upgrades_the_protocol(
    session: txsql.Session,
) -> None:
    r = session.sql(
        "CREATE OR REPLACE TABLE t AS SELECT 1 AS id, TIMESTAMP_NTZ'2024-01-01 00:00:00' AS t"
    )
    assert "protocol upgraded" in r.message and "timestampNtz" in r.message
    root = Path(session.warehouse) / "t"
    protocol = next(a["protocol"] for a in commit_actions(root, 2) if "protocol" in a)
    assert "timestampNtz" in protocol["readerFeatures"]
    assert "timestampNtz" in protocol["writerFeatures"]
    assert duckdb_rows(str(root), 2, "id, CAST(t AS VARCHAR)") == [(1, "2024-01-01 00:00:00")]
    assert deltalake_rows(str(root), 2, "id") == [(1,)]
    # Replacing it again with a plain schema keeps the feature (never a downgrade).
    again = session.sql("REPLACE TABLE t (id INT)")
    assert again.message == ""
    assert not [a for a in commit_actions(root, 3) if "protocol" in a]
