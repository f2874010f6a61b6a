"""ALTER COLUMN ... TYPE widens a column in a metadata-only commit (type widening).

DuckDB's delta extension must read the old narrow files at the new type, together with
rows written after the change (deltalake 1.6 refuses the typeWidening feature).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import SchemaError, UnsupportedFeatureError, UnsupportedStatementError
from txsql.log.actions import AddFile, Metadata, RemoveFile
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    session.sql(
        "CREATE TABLE t (p INT, v INT, d DECIMAL(5, 2), f FLOAT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    session.sql("INSERT INTO t VALUES (1, 2000000000, 123.45, 1.5), (2, -7, 0.01, -2.25)")
    return session


def _field(log: DeltaLog, name: str) -> dict[str, Any]:
    fields = log.snapshot().schema_json["fields"]
    return next(f for f in fields if f["name"] == name)


def test_widening_rewrites_no_file_and_readers_agree(s: txsql.Session) -> None:
    log = s.table("t").log
    before = {f.path for f in log.snapshot().files}
    s.sql("ALTER TABLE t ALTER COLUMN v TYPE BIGINT")
    s.sql("ALTER TABLE t CHANGE COLUMN d d DECIMAL(10, 3)")
    s.sql("ALTER TABLE t ALTER COLUMN f TYPE DOUBLE")
    s.sql("ALTER TABLE t ALTER COLUMN p TYPE BIGINT")  # a partition column: values re-parsed
    for version in (2, 3, 4, 5):
        actions = log.read_commit(version)
        assert not [a for a in actions if isinstance(a, (AddFile, RemoveFile))]
        assert [a for a in actions if isinstance(a, Metadata)]
    assert {f.path for f in log.snapshot().files} == before
    v = _field(log, "v")
    assert v["type"] == "long"
    assert v["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert _field(log, "d")["type"] == "decimal(10,3)"
    s.sql("INSERT INTO t VALUES (5000000000, 9000000000, 1234567.891, 0.1)")
    s.sql("UPDATE t SET v = v + 1 WHERE p = 1")  # a row of an old narrow file
    rows = sorted(tuple(r) for r in s.sql("SELECT p, v, d FROM t").df.collect())
    latest = log.latest_version()
    assert latest is not None
    expected = [(p, v, float(d)) for p, v, d in rows]
    assert [r[:2] for r in rows] == [(1, 2000000001), (2, -7), (5000000000, 9000000000)]
    found = duckdb_rows(log.table_root, latest, "p, v, CAST(d AS DOUBLE)")
    assert found == expected
    history = s.sql("DESCRIBE HISTORY t").df.collect()
    assert any(r["operation"] == "CHANGE COLUMN" for r in history)


@pytest.mark.parametrize(
    ("statement", "error", "named"),
    [
        ("ALTER TABLE t ALTER COLUMN v TYPE SMALLINT", SchemaError, "widening"),
        ("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(5, 3)", SchemaError, "widening"),
        ("ALTER TABLE t ALTER COLUMN v TYPE STRING", SchemaError, "widening"),
        ("ALTER TABLE t ALTER COLUMN v TYPE INT", SchemaError, "already"),
        ("ALTER TABLE t CHANGE COLUMN v w BIGINT", UnsupportedStatementError, "RENAME COLUMN"),
        ("ALTER TABLE t ALTER COLUMN nope TYPE BIGINT", SchemaError, "nope"),
    ],
)
def test_refused_changes_leave_the_table(
    s: txsql.Session, statement: str, error: type[Exception], named: str
) -> None:
    log = s.table("t").log
    with pytest.raises(error, match=named) as refused:
        s.sql(statement)
    assert getattr(refused.value, "hint", None)
    assert log.latest_version() == 1


def test_widening_needs_the_property(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE n (v INT)")
    with pytest.raises(UnsupportedFeatureError, match="type widening is off") as refused:
        s.sql("ALTER TABLE n ALTER COLUMN v TYPE BIGINT")
    assert "delta.enableTypeWidening" in (refused.value.hint or "")
    s.sql("ALTER TABLE n SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    s.sql("ALTER TABLE n ALTER COLUMN v TYPE BIGINT")
    protocol = s.table("n").log.snapshot().protocol
    assert "typeWidening" in (protocol.writer_features or ())
    raw = (Path(s.table("n").location) / "_delta_log" / f"{2:020d}.json").read_text()
    assert json.loads(raw.splitlines()[0])["commitInfo"]["operation"] == "CHANGE COLUMN"
