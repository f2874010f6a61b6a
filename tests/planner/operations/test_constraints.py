"""CHECK constraints and NOT NULL through SQL (issue 13 item 2, protocol upgrades item 7).

Oracles: deltalake enforces the constraint txsql stored (it refuses a violating append on
its own), and DuckDB/deltalake read the rows txsql wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import (
    CheckConstraintViolationError,
    ConstraintDefinitionError,
    InvalidTablePropertyError,
    MetadataChangedError,
    NotNullViolationError,
)
from txsql.log.deltalog import DeltaLog
from txsql.log.features import writer_features

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def _rows(s: txsql.Session, sql: str = "SELECT id, x FROM t") -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(sql).df.collect())


def test_add_constraint_validates_upgrades_and_is_enforced(session: txsql.Session) -> None:
    s = session
    s.sql("CREATE TABLE t (id BIGINT, x BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 5), (2, -1), (3, NULL)")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    before = log.latest_version()
    with pytest.raises(ConstraintDefinitionError) as info:
        s.sql("ALTER TABLE t ADD CONSTRAINT pos CHECK (x > 0)")
    # NULL breaks a CHECK too (Delta's rule): two rows, one of them shown.
    assert "2 row(s)" in info.value.message and "pos" in info.value.message
    assert log.latest_version() == before
    s.sql("DELETE FROM t WHERE x IS NULL OR x <= 0")
    result = s.sql("ALTER TABLE t ADD CONSTRAINT Pos CHECK (x > 0)")
    assert "checkConstraints" in result.message  # the protocol upgrade is announced
    snapshot = log.snapshot()
    assert snapshot.metadata.configuration["delta.constraints.pos"] == "x > 0"
    assert "checkConstraints" in writer_features(snapshot.protocol)
    with pytest.raises(ConstraintDefinitionError, match="already exists"):
        s.sql("ALTER TABLE t ADD CONSTRAINT pos CHECK (x > 1)")
    with pytest.raises(ConstraintDefinitionError, match="not boolean"):
        s.sql("ALTER TABLE t ADD CONSTRAINT num CHECK (x + 1)")
    with pytest.raises(ConstraintDefinitionError, match="does not apply"):
        s.sql("ALTER TABLE t ADD CONSTRAINT bad CHECK (nope > 1)")
    with pytest.raises(InvalidTablePropertyError):
        s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.constraints.sneaky' = 'false')")
    version = log.latest_version()
    with pytest.raises(CheckConstraintViolationError) as violated:
        s.sql("INSERT INTO t VALUES (4, 7), (5, -3)")
    assert "pos" in violated.value.message and '"x":-3' in violated.value.message
    assert log.latest_version() == version
    # deltalake reads the rule from the log and enforces it on its own writes.
    with pytest.raises(DeltaError, match=r"(?i)invalid data|check|constraint"):
        write_deltalake(log.table_root, pa.table({"id": [9], "x": [-9]}), mode="append")
    write_deltalake(log.table_root, pa.table({"id": [9], "x": [9]}), mode="append")
    expected = [(1, 5), (9, 9)]
    assert _rows(s) == expected
    latest = log.latest_version()
    assert latest is not None
    assert duckdb_rows(log.table_root, latest, "id, x") == expected
    assert deltalake_rows(log.table_root, latest, "id, x") == expected
    s.sql("ALTER TABLE t DROP CONSTRAINT pos")
    assert "delta.constraints.pos" not in log.snapshot().metadata.configuration
    s.sql("INSERT INTO t VALUES (10, -10)")
    assert s.sql("ALTER TABLE t DROP CONSTRAINT IF EXISTS pos").version is not None
    assert log.latest_version() == latest + 2  # IF EXISTS on a missing one commits nothing
    with pytest.raises(ConstraintDefinitionError, match="no constraint pos"):
        s.sql("ALTER TABLE t DROP CONSTRAINT pos")


def test_not_null_set_validates_and_drop_relaxes(session: txsql.Session) -> None:
    s = session
    s.sql("CREATE TABLE t (id BIGINT, x BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 5), (2, NULL)")
    with pytest.raises(ConstraintDefinitionError, match="1 row"):
        s.sql("ALTER TABLE t ALTER COLUMN x SET NOT NULL")
    s.sql("UPDATE t SET x = 0 WHERE x IS NULL")
    s.sql("ALTER TABLE t ALTER COLUMN x SET NOT NULL")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    assert "invariants" in writer_features(log.snapshot().protocol)
    with pytest.raises(NotNullViolationError, match="column x"):
        s.sql("INSERT INTO t (id) VALUES (3)")
    with pytest.raises(NotNullViolationError):
        s.sql("MERGE INTO t USING (SELECT 1 AS id) src ON t.id = src.id "
              "WHEN MATCHED THEN UPDATE SET x = NULL")  # fmt: skip
    s.sql("ALTER TABLE t ALTER COLUMN x DROP NOT NULL")
    s.sql("INSERT INTO t (id) VALUES (3)")
    assert _rows(s) == [(1, 5), (2, 0), (3, None)]


def test_add_constraint_conflicts_with_a_concurrent_violating_append(
    session: txsql.Session,
) -> None:
    """Interleaved: an INSERT that started before ADD CONSTRAINT must not commit unchecked."""
    s = session
    s.sql("CREATE TABLE t (id BIGINT, x BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 5)")
    writer = s.begin()
    writer.sql("INSERT INTO t VALUES (2, -5)")  # checked against the old (no) rules
    s.sql("ALTER TABLE t ADD CONSTRAINT pos CHECK (x > 0)")
    with pytest.raises(MetadataChangedError):
        writer.commit()
    # The only serial orders: the append first (then ADD CONSTRAINT fails) or the
    # constraint first (then the append fails); here the constraint won.
    assert _rows(s) == [(1, 5)]
