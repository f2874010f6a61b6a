"""TRUNCATE TABLE: one commit removing every file; other readers agree; history kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import CommitConflictError, TableNotFoundError, UnsupportedStatementError

pytestmark = pytest.mark.spark


def test_truncate_removes_every_row_in_one_commit(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    s.sql("DELETE FROM t WHERE id = 3")
    result = s.sql("TRUNCATE TABLE t")
    assert result.version == 3 and result.operation == "TRUNCATE"
    location = str(tmp_path / "wh" / "t")
    assert duckdb_rows(location, 3, "id") == []
    assert deltalake_rows(location, 3, "id") == []
    assert duckdb_rows(location, 2, "id") == [(1,), (2,)]  # time travel still reads them
    assert s.sql("SELECT count(*) AS n FROM t").df.first().n == 0
    history = s.sql("DESCRIBE HISTORY t LIMIT 1").df.collect()
    assert [(h.version, h.operation) for h in history] == [(3, "TRUNCATE")]
    assert history[0].operationMetrics["numRemovedFiles"] == "2"
    s.sql("INSERT INTO t VALUES (4, 'c')")  # still the same table, still writable
    assert deltalake_rows(location, 4, "id, p") == [(4, "c")]


def test_truncate_errors(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a')")
    with pytest.raises(UnsupportedStatementError, match="PARTITION") as info:
        s.sql("TRUNCATE TABLE t PARTITION (p = 'a')")
    assert "DELETE FROM" in (info.value.hint or "")
    with pytest.raises(TableNotFoundError):
        s.sql("TRUNCATE TABLE missing")
    assert s.sql("SELECT count(*) AS n FROM t").df.first().n == 1


def test_truncate_racing_writers_ends_in_a_serial_order(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT)")

    def ids() -> list[int]:
        return sorted(r.id for r in s.sql("SELECT id FROM t").df.collect())

    # A blind append racing a TRUNCATE: the only serial order a commit after the
    # TRUNCATE can stand for is "TRUNCATE, then INSERT".
    s.sql("INSERT INTO t VALUES (1), (2)")
    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (9)")
    s.sql("TRUNCATE TABLE t")
    tx.commit()
    assert ids() == [9]
    # An UPDATE that read the rows TRUNCATE removed: both serial orders leave no rows;
    # committing its rewritten rows after the TRUNCATE would resurrect them.
    tx = s.begin()
    tx.sql("UPDATE t SET id = id + 1")
    s.sql("TRUNCATE TABLE t")
    with pytest.raises(CommitConflictError):
        tx.commit()  # refused: the table stays as TRUNCATE left it
    assert ids() == []
