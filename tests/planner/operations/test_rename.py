"""ALTER TABLE t RENAME TO u: catalog only; the files stay; u must be free."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import TableExistsError, TableNotFoundError

pytestmark = pytest.mark.spark


def test_rename_moves_the_name_not_the_files(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT)")
    s.sql("INSERT INTO t VALUES (1)")
    result = s.sql("ALTER TABLE t RENAME TO u")
    location = str(tmp_path / "wh" / "t")
    assert location in result.message
    assert duckdb_rows(location, 1, "id") == [(1,)]  # not moved
    s.sql("INSERT INTO u VALUES (2)")
    assert sorted(r.id for r in s.sql("SELECT id FROM u").df.collect()) == [1, 2]
    with pytest.raises(TableNotFoundError, match="belong to u"):
        s.sql("INSERT INTO t VALUES (3)")
    assert "t" not in s.catalog.names() and "u" in s.catalog.names()
    for create in ("CREATE TABLE t (id INT)", "CREATE TABLE IF NOT EXISTS t (id INT)"):
        with pytest.raises(TableExistsError, match="renamed from t") as info:
            s.sql(create)  # t does not exist, but its managed place is u's: never "done"
        assert "LOCATION" in (info.value.hint or "")
    s.sql(f"CREATE TABLE t (x STRING) LOCATION '{tmp_path / 't_new'}'")
    assert s.sql("DESCRIBE HISTORY u").df.count() == 3  # no commit for a rename
    # still a managed table: DROP deletes the files
    s.sql("DROP TABLE u")
    assert not Path(location).exists()


def test_rename_refuses_an_existing_target(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE a (id INT)")
    s.sql("CREATE TABLE b (id INT)")
    with pytest.raises(TableExistsError, match="already exists"):
        s.sql("ALTER TABLE a RENAME TO b")
    with pytest.raises(TableNotFoundError):
        s.sql("ALTER TABLE nope RENAME TO c")
    s.sql("CREATE SCHEMA s2")
    s.sql("ALTER TABLE a RENAME TO s2.a")  # into another schema: still catalog only
    assert s.sql("SHOW TABLES IN s2").df.collect()[0].tableName == "a"
    assert (tmp_path / "wh" / "a" / "_delta_log").is_dir()
