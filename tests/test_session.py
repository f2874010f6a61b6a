"""End-to-end SQL through Session: CREATE, INSERT, SELECT with time travel, history."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from txsql.errors import (
    NotNullViolationError,
    SchemaError,
    SqlParseError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedStatementError,
    VersionNotFoundError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _rows(result: txsql.Result) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in result.df.collect())


def test_create_insert_select_and_time_travel(s: txsql.Session) -> None:
    created = s.sql("CREATE TABLE t (id BIGINT NOT NULL, name STRING, p INT) PARTITIONED BY (p)")
    assert (created.version, created.operation) == (0, "CREATE TABLE")
    first = s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, NULL, 2), (3, 'c', NULL)")
    assert first.version == 1 and first.metrics == {"num_affected_rows": 3, "num_inserted_rows": 3}
    second = s.sql("INSERT INTO t (id, p) SELECT id + 10, p FROM t WHERE id < 3")
    assert second.version == 2 and second.read_version == 1
    assert _rows(s.sql("SELECT * FROM t")) == [
        (1, "a", 1),
        (2, None, 2),
        (3, "c", None),
        (11, None, 1),
        (12, None, 2),
    ]
    assert _rows(s.sql("SELECT id FROM t VERSION AS OF 1")) == [(1,), (2,), (3,)]
    assert _rows(s.sql("SELECT count(*) FROM t VERSION AS OF 0")) == [(0,)]
    table = s.table("t")
    assert table.version() == 2
    assert len(table.to_pandas(version=1)) == 3


def test_commit_info_is_delta_like(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'x')")
    log_dir = Path(s.table("t").location) / "_delta_log"
    lines = [
        json.loads(x) for x in (log_dir / "00000000000000000001.json").read_text().splitlines()
    ]
    info = lines[0]["commitInfo"]
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["engineInfo"].startswith("txsql/")
    assert info["operationMetrics"]["numOutputRows"] == "1"
    add = lines[1]["add"]
    assert add["partitionValues"] == {"p": "x"} and json.loads(add["stats"])["numRecords"] == 1
    protocol = json.loads((log_dir / "00000000000000000000.json").read_text().splitlines()[1])
    assert protocol["protocol"]["readerFeatures"] == ["deletionVectors"]


def test_describe_history_uses_delta_column_names(s: txsql.Session) -> None:
    s.sql("CREATE TABLE h (id INT)")
    s.sql("INSERT INTO h VALUES (1)")
    history = s.sql("DESCRIBE HISTORY h").df
    assert history.columns[:5] == ["version", "timestamp", "userId", "userName", "operation"]
    rows = history.collect()
    assert [(r.version, r.operation) for r in rows] == [(1, "WRITE"), (0, "CREATE TABLE")]
    assert rows[0].operationMetrics["numOutputRows"] == "1"


def test_ctas_location_and_path_addressing(s: txsql.Session, tmp_path: Path) -> None:
    location = tmp_path / "external"
    s.sql(
        f"CREATE TABLE ext PARTITIONED BY (k) LOCATION '{location}' "
        "AS SELECT id, id % 2 AS k FROM range(5)"
    )
    assert os.path.isdir(location / "_delta_log")
    assert _rows(s.sql("SELECT count(*) FROM ext")) == [(5,)]
    assert _rows(s.sql(f"SELECT sum(id) FROM delta.`{location}`")) == [(10,)]
    assert s.table(str(location)).version() == 0


def test_timestamp_as_of(s: txsql.Session) -> None:
    s.sql("CREATE TABLE ts (id INT)")
    s.sql("INSERT INTO ts VALUES (1)")
    log_dir = Path(s.table("ts").location) / "_delta_log"
    os.utime(log_dir / "00000000000000000000.json", (1_700_000_000, 1_700_000_000))
    os.utime(log_dir / "00000000000000000001.json", (1_700_000_100, 1_700_000_100))
    assert _rows(s.sql("SELECT count(*) FROM ts TIMESTAMP AS OF '2023-11-14 22:13:50'")) == [(0,)]
    assert _rows(s.sql("SELECT count(*) FROM ts TIMESTAMP AS OF '2023-11-14 22:15:00'")) == [(1,)]
    with pytest.raises(VersionNotFoundError):
        s.sql("SELECT * FROM ts TIMESTAMP AS OF '2001-01-01'")


def test_errors_name_the_statement_and_leave_tables_unchanged(s: txsql.Session) -> None:
    s.sql("CREATE TABLE e (id BIGINT NOT NULL, name STRING)")
    with pytest.raises(SqlParseError) as parse:
        s.sql("INSERT INTO e VALUES (1, 'a');\nSELEC * FROM e")
    assert parse.value.line == 2 and parse.value.column is not None
    assert s.table("e").version() == 0, "a script with a syntax error runs nothing"
    with pytest.raises(SchemaError, match="3 column"):
        s.sql("INSERT INTO e VALUES (1, 'a', 'extra')")
    with pytest.raises(NotNullViolationError, match="NOT NULL"):
        s.sql("INSERT INTO e VALUES (NULL, 'a')")
    with pytest.raises(TableExistsError):
        s.sql("CREATE TABLE e (id INT)")
    s.sql("CREATE TABLE IF NOT EXISTS e (id INT)")
    with pytest.raises(TableNotFoundError) as missing:
        s.sql("SELECT 1;\n  INSERT INTO nope VALUES (1)")
    assert (missing.value.line, missing.value.column) == (2, 3)
    with pytest.raises(UnsupportedStatementError):
        s.sql("DROP VIEW e")
    with pytest.raises(VersionNotFoundError):
        s.sql("SELECT * FROM e VERSION AS OF 7")
    assert s.table("e").version() == 0
    assert _rows(s.sql("SELECT count(*) FROM e")) == [(0,)]
    leftovers = list(Path(s.table("e").location).rglob("*.parquet"))
    assert leftovers == [], "failed writes leave no data files behind"


def test_columns_named_like_scan_internals(s: txsql.Session) -> None:
    """A table's own columns (k, p, r...) never collide with the scan's helper columns."""
    s.sql("CREATE TABLE c (id BIGINT, k INT, p STRING, r DOUBLE) PARTITIONED BY (p)")
    s.sql("INSERT INTO c VALUES (1, 10, 'a', 0.5), (2, 20, 'a', 1.5), (3, 30, 'b', 2.5)")
    s.sql("DELETE FROM c WHERE id = 1")
    s.sql("UPDATE c SET k = k + 1 WHERE id = 3")
    assert _rows(s.sql("SELECT * FROM c")) == [(2, 20, "a", 1.5), (3, 31, "b", 2.5)]
