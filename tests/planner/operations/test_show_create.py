"""SHOW CREATE TABLE round-trips: its output makes a table with the same definition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark


def _definition(location: Path) -> tuple[Any, ...]:
    snapshot = DeltaLog.for_path(str(location)).snapshot()
    metadata = snapshot.metadata
    return (
        json.loads(metadata.schema_string),
        metadata.partition_columns,
        metadata.configuration,
        metadata.description,
        snapshot.protocol,
    )


def test_show_create_table_round_trips(spark: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    s = txsql.Session(spark, warehouse=str(wh))
    s.sql(
        "CREATE TABLE t (id BIGINT NOT NULL COMMENT 'it\\'s the key', `odd name` STRING, "
        "tags ARRAY<STRING>, v VARCHAR(3), p DATE) PARTITIONED BY (p) COMMENT 'c' "
        "TBLPROPERTIES ('delta.appendOnly' = 'true', 'team' = 'x')"
    )
    ddl = s.sql("SHOW CREATE TABLE t").df.first().createtab_stmt
    assert "LOCATION" not in ddl  # a managed table's place follows from its name
    s.sql(ddl.replace("CREATE TABLE default.t", "CREATE TABLE t_copy", 1))
    assert _definition(wh / "t_copy") == _definition(wh / "t")

    # Generated, identity and DEFAULT columns and CHECK constraints round-trip too.
    s.sql(
        "CREATE TABLE g (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 2), "
        "a INT DEFAULT 7, b INT GENERATED ALWAYS AS (a * 2)) "
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"
    )
    s.sql("ALTER TABLE g ADD CONSTRAINT positive CHECK (a > 0)")
    script = s.sql("SHOW CREATE TABLE g").df.first().createtab_stmt
    s.sql(script.replace("default.g", "g_copy"))
    assert _definition(wh / "g_copy") == _definition(wh / "g")
    s.sql("INSERT INTO g_copy (a) VALUES (3)")
    assert [tuple(r) for r in s.sql("SELECT * FROM g_copy").df.collect()] == [(5, 3, 6)]

    external = tmp_path / "ext"
    s.sql(f"CREATE TABLE e (a INT) LOCATION '{external}'")
    ddl = s.sql("SHOW CREATE TABLE e").df.first().createtab_stmt
    assert f"LOCATION '{external}'" in ddl
