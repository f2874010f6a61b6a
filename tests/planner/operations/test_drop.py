"""DROP TABLE: managed tables lose their files, external ones only their name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows
from txsql.errors import (
    CorruptLogError,
    SqlError,
    TableNotFoundError,
    TransactionError,
    TxSqlError,
    UnsupportedStatementError,
)
from txsql.log.deltalog import DeltaLog
from txsql.planner.catalog_entries import REGISTRY_DIR
from txsql.planner.sql.refs import TableRef
from txsql.storage.filesystem import LocalFileIO

pytestmark = pytest.mark.spark


def _session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path / "wh"))


def test_drop_managed_table_deletes_every_file_and_the_name(spark: Any, tmp_path: Path) -> None:
    s = _session(spark, tmp_path)
    s.sql("CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    s.sql("DELETE FROM t WHERE id = 1")  # a deletion vector file or a rewrite
    result = s.sql("DROP TABLE t")
    assert result.operation == "DROP TABLE" and "managed" in result.message
    assert not (tmp_path / "wh" / "t").exists()
    assert not (tmp_path / "wh" / REGISTRY_DIR / "t.json").exists()
    assert "t" not in s.catalog.names()
    with pytest.raises(TableNotFoundError):
        s.sql("DROP TABLE t")
    assert "does not exist" in s.sql("DROP TABLE IF EXISTS t").message
    s.sql("CREATE TABLE t (other STRING)")  # the name and the place are free again
    assert s.sql("SELECT * FROM t").df.count() == 0


def test_drop_external_table_keeps_its_files(spark: Any, tmp_path: Path) -> None:
    s = _session(spark, tmp_path)
    location = str(tmp_path / "ext")
    s.sql(f"CREATE TABLE e (id INT) LOCATION '{location}'")
    s.sql("INSERT INTO e VALUES (7)")
    result = s.sql("DROP TABLE e")
    assert "external" in result.message and location in result.message
    assert deltalake_rows(location, 1, "id") == [(7,)]  # an independent reader still reads it
    with pytest.raises(TableNotFoundError):
        s.sql("INSERT INTO e VALUES (8)")


def test_drop_refusals_are_typed(spark: Any, tmp_path: Path) -> None:
    s = _session(spark, tmp_path)
    s.sql("CREATE TABLE t (id INT)")
    with pytest.raises(UnsupportedStatementError, match="path table") as info:
        s.sql(f"DROP TABLE delta.`{tmp_path / 'wh' / 't'}`")
    assert info.value.hint
    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (1)")
    with pytest.raises(TransactionError, match="inside BEGIN"):
        tx.sql("DROP TABLE t")
    tx.rollback()
    with pytest.raises(SqlError, match="exactly-once"):
        s.sql("DROP TABLE t", app_id="job", app_version=1)
    assert s.catalog.exists(TableRef(name="t"))


def test_drop_racing_a_writer_never_leaves_a_valid_looking_table(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _session(spark, tmp_path)
    s.sql("CREATE TABLE t (id INT)")
    s.sql("INSERT INTO t VALUES (1)")
    # A writer that read the table before the DROP commits after it: refused, typed.
    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (2)")
    s.sql("DROP TABLE t")
    with pytest.raises(TxSqlError):
        tx.commit()
    assert not (tmp_path / "wh" / "t").exists()

    # A DROP that dies after breaking the log and deleting the data, before the log:
    # the directory is no valid table (CorruptLogError, not "a table without its rows").
    s.sql("CREATE TABLE u (id INT)")
    s.sql("INSERT INTO u VALUES (1)")
    s.sql("INSERT INTO u VALUES (2)")

    real_delete = LocalFileIO.delete

    def crash_in_log(self: LocalFileIO, path: str) -> None:
        if "/_delta_log/" in path and "/u/" in path and not path.endswith("0.json"):
            raise OSError("crash while deleting the log")
        real_delete(self, path)

    monkeypatch.setattr(LocalFileIO, "delete", crash_in_log)
    with pytest.raises(TxSqlError, match="crash"):
        s.sql("DROP TABLE u")
    location = str(tmp_path / "wh" / "u")
    assert not [n for n in os.listdir(location) if n != "_delta_log"], "data deleted first"
    with pytest.raises(CorruptLogError):
        DeltaLog.for_path(location).snapshot()
    monkeypatch.undo()
    s.sql("DROP TABLE u")  # running it again finishes the job
    assert not os.path.exists(location)
