"""VARCHAR(n) stored as Delta stores it and enforced on every write path; CHAR(n) refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import CharVarcharLengthError, UnsupportedStatementError
from txsql.log.actions import Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction

pytestmark = [pytest.mark.spark]

ROWS = [(1, "abc"), (2, "ab ")]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def rows(s: txsql.Session) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql("SELECT id, v FROM t").df.collect())


def test_varchar_is_stored_like_delta_and_every_write_path_checks_it(
    session: txsql.Session,
) -> None:
    s = session
    s.sql("CREATE TABLE t (id INT, v VARCHAR(3) COMMENT 'code')")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    field = json.loads(log.snapshot().metadata.schema_string)["fields"][1]
    assert field["type"] == "string"
    assert field["metadata"] == {"comment": "code", "__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"}
    # Spark's rule: trailing spaces past the length are cut, anything else is refused.
    s.sql("INSERT INTO t VALUES (1, 'abc'), (2, 'ab    ')")
    assert rows(s) == ROWS
    version = log.latest_version()
    failing = [
        "INSERT INTO t VALUES (3, 'much too long')",
        "INSERT INTO t SELECT id + 10, 12345 FROM t",  # cast to string first, then checked
        "UPDATE t SET v = 'abcd' WHERE id = 1",
        "MERGE INTO t USING (SELECT 2 AS id, 'wxyz' AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v",
    ]
    for sql in failing:
        with pytest.raises(CharVarcharLengthError) as info:
            s.sql(sql)
        assert "column v" in info.value.message and "VARCHAR(3)" in info.value.message, sql
        assert "'much too long'" in info.value.message or "much" not in sql
    with pytest.raises(CharVarcharLengthError):
        s.table("t").append(s.spark.createDataFrame([(5, "long one")], "id INT, v STRING"))
    assert log.latest_version() == version  # nothing was committed
    assert rows(s) == ROWS
    # Values that fit pass through UPDATE and MERGE; other readers see a string column.
    s.sql("UPDATE t SET v = 'xy' WHERE id = 1")
    s.sql(
        "MERGE INTO t USING (SELECT 3 AS id, 'z' AS v) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    expected = [(1, "xy"), (2, "ab "), (3, "z")]
    assert rows(s) == expected
    latest = log.latest_version()
    assert latest is not None
    assert duckdb_rows(log.table_root, latest, "id, v") == expected
    assert deltalake_rows(log.table_root, latest, "id, v") == expected


def test_added_varchar_column_is_checked_and_char_is_refused_by_name(
    session: txsql.Session,
) -> None:
    s = session
    s.sql("CREATE TABLE t (id INT, v STRING)")
    s.sql("ALTER TABLE t ADD COLUMNS (w VARCHAR(2))")
    s.sql("INSERT INTO t VALUES (1, 'anything goes', 'ok')")
    with pytest.raises(CharVarcharLengthError, match="column w"):
        s.sql("INSERT INTO t VALUES (2, 'x', 'nope')")
    assert [tuple(r) for r in s.sql("SELECT * FROM t").df.collect()] == [(1, "anything goes", "ok")]
    with pytest.raises(UnsupportedStatementError, match="CHAR\\(2\\)"):
        s.sql("CREATE TABLE c (code CHAR(2))")
    with pytest.raises(UnsupportedStatementError, match="ARRAY"):
        s.sql("CREATE TABLE c (codes ARRAY<VARCHAR(2)>)")
    with pytest.raises(UnsupportedStatementError, match="CHAR"):
        s.sql("ALTER TABLE t ADD COLUMNS (c CHAR(1))")
    assert "c" not in s.catalog.names()


def test_char_column_of_an_existing_table_is_padded_and_checked(
    session: txsql.Session, tmp_path: Path
) -> None:
    # A table another engine (Delta Spark) created with a CHAR(3) column.
    root = str(tmp_path / "spark_made")
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
            {
                "name": "c",
                "type": "string",
                "nullable": True,
                "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "char(3)"},
            },
        ],
    }
    with Transaction(DeltaLog.for_path(root)) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="c3", schema_string=json.dumps(schema))])
        txn.commit("CREATE TABLE")
    table = f"delta.`{root}`"
    session.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'abc'), (3, 'ab   '), (4, NULL)")
    with pytest.raises(CharVarcharLengthError, match="CHAR\\(3\\)"):
        session.sql(f"INSERT INTO {table} VALUES (5, 'abcd')")
    expected = [(1, "a  "), (2, "abc"), (3, "ab "), (4, None)]
    assert duckdb_rows(root, 1, "id, c") == expected
    assert DeltaLog.for_path(root).latest_version() == 1
