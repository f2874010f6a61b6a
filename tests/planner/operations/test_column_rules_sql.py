"""Generated, default and identity columns through SQL (issue 13 items 3-5).

Oracles: the field metadata is read back as Delta specifies it; deltalake and DuckDB read
the rows; identity uniqueness under two interleaved writers is compared with the serial
orders (one writer must lose, never duplicate).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import (
    CommitConflictError,
    ConstraintDefinitionError,
    GeneratedColumnMismatchError,
    IdentityColumnError,
    SchemaError,
    UnsupportedFeatureError,
)
from txsql.log.deltalog import DeltaLog
from txsql.log.features import writer_features

pytestmark = [pytest.mark.spark]

DEFAULTS_ON = "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def _rows(s: txsql.Session, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(sql).df.collect())


def _fields(log: DeltaLog) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in json.loads(log.snapshot().metadata.schema_string)["fields"]}


def test_generated_column_computed_checked_and_recomputed(session: txsql.Session) -> None:
    s = session
    s.sql("CREATE TABLE t (x INT, y INT GENERATED ALWAYS AS (x * 2)) PARTITIONED BY (y)")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    assert _fields(log)["y"]["metadata"] == {"delta.generationExpression": "x * 2"}
    assert "generatedColumns" in writer_features(log.snapshot().protocol)
    s.sql("INSERT INTO t (x) VALUES (1), (2)")
    s.sql("INSERT INTO t VALUES (3, 6)")  # explicit and equal: accepted
    with pytest.raises(GeneratedColumnMismatchError, match="x \\* 2"):
        s.sql("INSERT INTO t VALUES (4, 9)")
    s.sql("UPDATE t SET x = 10 WHERE x = 1")  # y follows x, into another partition
    for sql in (
        "UPDATE t SET y = 0",
        "MERGE INTO t USING (SELECT 5 AS x) s ON t.x = s.x "
        "WHEN NOT MATCHED THEN INSERT (x, y) VALUES (s.x, 1)",
    ):
        with pytest.raises(GeneratedColumnMismatchError, match="generated as x \\* 2"):
            s.sql(sql)
    s.sql(
        "MERGE INTO t USING (SELECT 3 AS x UNION ALL SELECT 7) s ON t.x = s.x "
        "WHEN MATCHED THEN UPDATE SET x = s.x + 100 WHEN NOT MATCHED THEN INSERT (x) VALUES (s.x)"
    )
    expected = [(2, 4), (7, 14), (10, 20), (103, 206)]
    assert _rows(s, "SELECT x, y FROM t") == expected
    version = log.latest_version()
    assert version is not None
    assert deltalake_rows(log.table_root, version, "x, y") == expected
    assert duckdb_rows(log.table_root, version, "x, y") == expected
    refused = [
        "CREATE TABLE u (x INT, y DOUBLE GENERATED ALWAYS AS (rand()))",
        "CREATE TABLE u (x INT, y INT GENERATED ALWAYS AS (x + 1), z INT GENERATED ALWAYS AS (y))",
        "CREATE TABLE u (x INT, y INT GENERATED ALWAYS AS (nope + 1))",
        "CREATE TABLE u (x INT, y INT GENERATED ALWAYS AS (sum(x)))",
    ]
    for sql in refused:
        with pytest.raises(ConstraintDefinitionError):
            s.sql(sql)


def test_defaults_need_the_feature_and_fill_omitted_columns(session: txsql.Session) -> None:
    s = session
    with pytest.raises(UnsupportedFeatureError, match="allowColumnDefaults"):
        s.sql("CREATE TABLE t (id INT, status STRING DEFAULT 'new')")
    s.sql(f"CREATE TABLE t (id INT, status STRING DEFAULT 'new', n INT) {DEFAULTS_ON}")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    assert _fields(log)["status"]["metadata"] == {"CURRENT_DEFAULT": "'new'"}
    assert "allowColumnDefaults" in writer_features(log.snapshot().protocol)
    s.sql("INSERT INTO t (id) VALUES (1)")
    s.sql("INSERT INTO t VALUES (2, DEFAULT, DEFAULT)")  # n has no default: NULL
    s.sql("INSERT INTO t (id, status) VALUES (3, 'old')")
    s.sql("ALTER TABLE t ALTER COLUMN n SET DEFAULT 7")
    s.sql("INSERT INTO t (id) VALUES (4)")
    s.sql("ALTER TABLE t ALTER COLUMN status DROP DEFAULT")
    s.sql("INSERT INTO t (id) VALUES (5)")
    s.sql("ALTER TABLE t ALTER COLUMN status SET DEFAULT 'merged'")
    s.sql(
        "MERGE INTO t USING (SELECT 6 AS id UNION ALL SELECT 1) src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET n = DEFAULT "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (src.id)"
    )
    expected = [
        (1, "new", 7),
        (2, "new", None),
        (3, "old", None),
        (4, "new", 7),
        (5, None, 7),
        (6, "merged", 7),
    ]
    assert _rows(s, "SELECT id, status, n FROM t") == expected
    version = log.latest_version()
    assert version is not None
    assert duckdb_rows(log.table_root, version, "id, status, n") == expected
    with pytest.raises(ConstraintDefinitionError):
        s.sql("ALTER TABLE t ALTER COLUMN n SET DEFAULT id + 1")
    with pytest.raises(SchemaError, match="DEFAULT"):
        s.sql("ALTER TABLE t ADD COLUMNS (z INT DEFAULT 1)")


def test_identity_values_unique_and_high_water_mark_committed(session: txsql.Session) -> None:
    s = session
    s.sql(
        "CREATE TABLE t (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), "
        "v STRING)"
    )
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    assert "identityColumns" in writer_features(log.snapshot().protocol)
    s.sql("INSERT INTO t (v) VALUES ('a'), ('b')")
    s.sql("INSERT INTO t (v) SELECT 'c'")
    assert _rows(s, "SELECT id, v FROM t") == [(10, "a"), (15, "b"), (20, "c")]
    meta = _fields(log)["id"]["metadata"]
    assert meta["delta.identity.highWaterMark"] == 20
    for sql in ("INSERT INTO t (id, v) VALUES (99, 'x')", "INSERT INTO t VALUES (99, 'x')"):
        with pytest.raises(IdentityColumnError):
            s.sql(sql)
    with pytest.raises(IdentityColumnError):
        s.sql("MERGE INTO t USING (SELECT 'm' AS v) src ON t.v = src.v "
              "WHEN NOT MATCHED THEN INSERT (v) VALUES (src.v)")  # fmt: skip
    for sql in (
        "UPDATE t SET id = 1 WHERE v = 'a'",
        "MERGE INTO t USING (SELECT 'a' AS v) src ON t.v = src.v "
        "WHEN MATCHED THEN UPDATE SET t.id = 1",
    ):
        with pytest.raises(IdentityColumnError, match="identity column"):
            s.sql(sql)
    # Two writers interleaved: both hand out values past the same high-water mark, so
    # the second to commit must conflict (serial order: only one of them landed).
    first, second = s.begin(), s.begin()
    first.sql("INSERT INTO t (v) VALUES ('p')")
    second.sql("INSERT INTO t (v) VALUES ('q')")
    first.commit()
    with pytest.raises(CommitConflictError):
        second.commit()
    ids = [r[0] for r in _rows(s, "SELECT id, v FROM t")]
    assert len(ids) == len(set(ids)) == 4
    s.sql("INSERT INTO t (v) VALUES ('q')")  # the re-run gets fresh values
    rows = _rows(s, "SELECT id, v FROM t")
    assert [r[0] for r in rows] == [10, 15, 20, 25, 30]
    latest = log.latest_version()
    assert latest is not None
    assert duckdb_rows(log.table_root, latest, "id, v") == rows
    # Moving the high-water mark is no schema change for a writer that hands out no ids:
    # a DELETE interleaved with an identity INSERT commits too (as in Delta).
    deleter = s.begin()
    deleter.sql("DELETE FROM t WHERE v = 'a'")
    s.sql("INSERT INTO t (v) VALUES ('r')")
    deleter.commit()
    assert [r[0] for r in _rows(s, "SELECT id, v FROM t")] == [15, 20, 25, 30, 35]


def test_identity_named_with_a_dot_is_refused_and_a_nested_namesake_is_not(
    session: txsql.Session,
) -> None:
    """A SET target is a whole name (`dot.col`) or a qualified one (t.`dot.col`); a struct
    field named like an identity column (s.id) is not that column."""
    s = session
    s.sql(
        "CREATE TABLE t (`dot.col` BIGINT GENERATED ALWAYS AS IDENTITY, "
        "id BIGINT GENERATED ALWAYS AS IDENTITY, s STRUCT<id: INT>, v STRING)"
    )
    s.sql("INSERT INTO t (s, v) VALUES (named_struct('id', 1), 'a')")
    for sql in (
        "UPDATE t SET `dot.col` = 7",
        "MERGE INTO t USING (SELECT 'a' AS v) src ON t.v = src.v "
        "WHEN MATCHED THEN UPDATE SET t.`dot.col` = 7",
    ):
        with pytest.raises(IdentityColumnError, match=r"dot\.col"):
            s.sql(sql)
    s.sql("UPDATE t SET s.id = 5")
    s.sql(
        "MERGE INTO t USING (SELECT 'a' AS v) src ON t.v = src.v "
        "WHEN MATCHED THEN UPDATE SET t.s.id = t.s.id + 1"
    )
    assert _rows(s, "SELECT `dot.col`, id, s.id, v FROM t") == [(1, 1, 6, "a")]


def test_identity_by_default_accepts_explicit_values(session: txsql.Session) -> None:
    s = session
    s.sql("CREATE TABLE t (id BIGINT GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY -1), v INT)")
    s.sql("INSERT INTO t (v) VALUES (1)")
    s.sql("INSERT INTO t VALUES (100, 2)")  # explicit: kept, high-water mark unchanged
    s.sql("INSERT INTO t (v) VALUES (3)")
    assert _rows(s, "SELECT id, v FROM t") == [(0, 3), (1, 1), (100, 2)]
