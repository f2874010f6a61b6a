"""CREATE / DROP SCHEMA, USE, SHOW SCHEMAS / TABLES and schema.table names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from tests.magics import cell, ip
from txsql.errors import (
    SchemaExistsError,
    SchemaNotEmptyError,
    SchemaNotFoundError,
    SqlError,
)

pytestmark = pytest.mark.spark
__all__ = ["ip"]


def _rows(result: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in result.df.collect())


def test_schema_tables_live_in_schema_db_folders(spark: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    s = txsql.Session(spark, warehouse=str(wh))
    s.sql("CREATE SCHEMA sales COMMENT 'money'")
    s.sql("CREATE TABLE sales.orders (id INT)")
    s.sql("INSERT INTO sales.orders VALUES (1)")
    s.sql("CREATE TABLE orders (id INT)")  # default.orders: another table
    assert duckdb_rows(str(wh / "sales.db" / "orders"), 1, "id") == [(1,)]
    assert not (wh / "sales.orders").exists()
    assert (wh / "orders" / "_delta_log").is_dir()
    assert _rows(s.sql("SHOW SCHEMAS")) == [("default",), ("sales",)]
    assert _rows(s.sql("SHOW DATABASES LIKE 'sa*|x'")) == [("sales",)]
    assert _rows(s.sql("SHOW TABLES FROM sales")) == [("sales", "orders", False)]
    assert _rows(s.sql("SHOW TABLES LIKE 'ord*'")) == [("default", "orders", False)]
    assert _rows(s.sql("SHOW TABLES IN sales LIKE 'x*'")) == []
    s.sql("USE sales")
    s.sql("INSERT INTO orders VALUES (2)")  # resolves to sales.orders now
    assert _rows(s.sql("SELECT id FROM orders")) == [(1,), (2,)]
    assert _rows(s.sql("SELECT id FROM default.orders")) == []
    s.sql("USE DATABASE default")
    assert _rows(s.sql("SELECT o.id FROM sales.orders o WHERE o.id > 1")) == [(2,)]
    # LOCATION: the schema's managed tables go under it
    s.sql(f"CREATE DATABASE IF NOT EXISTS ext LOCATION '{tmp_path / 'ext_schema'}'")
    s.sql("CREATE TABLE ext.t AS SELECT 5 AS x")
    assert duckdb_rows(str(tmp_path / "ext_schema" / "t"), 0, "x") == [(5,)]


def test_schema_errors_and_drop_modes(spark: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    s = txsql.Session(spark, warehouse=str(wh))
    with pytest.raises(SchemaNotFoundError) as info:
        s.sql("CREATE TABLE nosuch.t (id INT)")
    assert info.value.hint and not (wh / "nosuch.db").exists()
    with pytest.raises(SchemaNotFoundError):
        s.sql("USE nosuch")
    with pytest.raises(SchemaNotFoundError):
        s.sql("SHOW TABLES IN nosuch")
    with pytest.raises(SqlError, match="invalid table name"):
        s.sql("INSERT INTO a.b.c VALUES (1)")
    s.sql("CREATE SCHEMA s1")
    with pytest.raises(SchemaExistsError):
        s.sql("CREATE SCHEMA s1")
    assert "already exists" in s.sql("CREATE SCHEMA IF NOT EXISTS s1").message
    s.sql("CREATE TABLE s1.a (id INT)")
    s.sql(f"CREATE TABLE s1.b (id INT) LOCATION '{tmp_path / 'b_ext'}'")
    with pytest.raises(SchemaNotEmptyError, match="a, b"):
        s.sql("DROP SCHEMA s1")  # RESTRICT is the default
    with pytest.raises(SchemaNotEmptyError):
        s.sql("DROP SCHEMA s1 RESTRICT")
    with pytest.raises(SqlError, match="default schema"):
        s.sql("DROP SCHEMA default")
    s.sql("USE s1")
    s.sql("DROP SCHEMA s1 CASCADE")
    assert not (wh / "s1.db").exists()  # managed table deleted, folder removed
    assert (tmp_path / "b_ext" / "_delta_log").is_dir()  # external table kept
    assert s.catalog.current_schema == "default"
    with pytest.raises(SchemaNotFoundError):
        s.sql("DROP SCHEMA s1")
    assert "does not exist" in s.sql("DROP SCHEMA IF EXISTS s1").message
    assert "does not exist" in s.sql("DROP TABLE IF EXISTS s1.a").message
    assert os.listdir(wh / "_txsql_catalog" / "_schemas") == []


def test_schemas_through_the_magic(ip: Any, tmp_path: Path) -> None:
    script = (
        "CREATE SCHEMA mkt;\nCREATE TABLE mkt.leads (id INT);\nINSERT INTO mkt.leads VALUES (1)"
    )
    cell(ip, script)
    assert "leads" in repr(cell(ip, "SHOW TABLES IN mkt"))
    cell(ip, "TRUNCATE TABLE mkt.leads")
    counted = cell(ip, "SELECT count(*) AS n FROM mkt.leads", line="-o counted")
    assert ip.user_ns["counted"] is counted
    dropped = cell(ip, "DROP TABLE mkt.leads")
    assert "dropped managed table mkt.leads" in repr(dropped)
    assert not (tmp_path / "wh" / "mkt.db" / "leads").exists()
