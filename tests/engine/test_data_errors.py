"""Failures caused by a value are typed errors naming the value: ANSI data exceptions
(bad casts, division by zero, overflow, a parameter of the wrong type) and partition
values whose directory name is too long for the file system. A failed write leaves the
table exactly as it was (DuckDB reads the same version and rows)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.engine.data_errors import data_value_error, partition_too_long_error
from txsql.errors import (
    ArithmeticOverflowError,
    DataValueError,
    DivisionByZeroError,
    InvalidCastError,
    ParameterTypeError,
    PartitionValueTooLongError,
    StorageWriteError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What a write job's failure looks like: the data exception is wrapped in TASK_WRITE_FAILED.
WRITE_FAILED = """An error occurred while calling o120.parquet.
: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to \
file:/t/_txsql_staging/a. SQLSTATE: 58030
Caused by: org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value \
'abc' of the type "STRING" cannot be cast to "INT" because it is malformed. Correct the \
value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed \
input and return NULL instead. SQLSTATE: 22018
"""


def test_data_exceptions_are_recognised_inside_wrapped_errors() -> None:
    typed = data_value_error(RuntimeError(WRITE_FAILED), "INSERT INTO t VALUES ('abc')", {})
    assert isinstance(typed, InvalidCastError)
    assert typed.message == (
        "the value 'abc' (STRING) cannot be cast to INT in `INSERT INTO t VALUES ('abc')`"
    )
    assert typed.spark_condition == "CAST_INVALID_INPUT" and "try_cast" in typed.hint
    overflow = data_value_error(
        RuntimeError(
            "[ARITHMETIC_OVERFLOW] integer overflow. Use 'try_add' to tolerate overflow and "
            'return NULL instead. If necessary set "spark.sql.ansi.enabled" to "false" to '
            "bypass this error. SQLSTATE: 22003"
        ),
        "SELECT n + 1 FROM t",
        {},
    )
    assert isinstance(overflow, ArithmeticOverflowError)
    assert "ansi" not in overflow.message  # Spark's advice to turn ANSI off is dropped
    generic = data_value_error(
        RuntimeError("[INVALID_ARRAY_INDEX] The index 5 is out of bounds. SQLSTATE: 22003"),
        "SELECT a[5] FROM t",
        {},
    )
    assert type(generic) is DataValueError and "index 5 is out of bounds" in generic.message
    assert (
        data_value_error(RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] x SQLSTATE: 42P01"), "", {})
        is None
    )


def test_a_string_parameter_that_does_not_cast_is_named() -> None:
    text = (
        "[CAST_INVALID_INPUT] The value 'it\\'s' of the type \"STRING\" cannot be cast to "
        '"DATE" because it is malformed. SQLSTATE: 22018'
    )
    typed = data_value_error(RuntimeError(text), "SELECT * FROM t WHERE d = :day", {"day": "it's"})
    assert isinstance(typed, ParameterTypeError) and typed.parameter == "day"
    assert typed.message.startswith("parameter :day = 'it\\'s' (a Python str")
    assert ":day as a value of type DATE" in typed.hint


def test_too_long_partition_directories_are_recognised() -> None:
    hadoop = (
        "Caused by: java.io.IOException: Mkdirs failed to create file:/w/t/_txsql_staging/x/"
        "_temporary/0/p=" + "y" * 260 + " (exists=false, cwd=file:/w)"
    )
    typed = partition_too_long_error(hadoop)
    assert isinstance(typed, PartitionValueTooLongError) and isinstance(typed, StorageWriteError)
    assert typed.partition_column == "p" and typed.length == 262
    java = (
        "java.io.FileNotFoundException: /w/t/a%3Db=" + "%2F" * 90 + "/part-0 (File name too long)"
    )
    escaped = partition_too_long_error(java)
    assert escaped is not None and escaped.partition_column == "a=b" and escaped.length == 276
    assert partition_too_long_error("Mkdirs failed to create /w/t/p=1 (exists=false)") is None


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _unchanged(s: txsql.Session, version: int, rows: list[tuple[Any, ...]]) -> None:
    handle = s.table("t")
    assert handle.version() == version
    assert duckdb_rows(handle.location, version, "id, n, p") == rows


@pytest.mark.spark
def test_failed_writes_are_typed_and_change_nothing(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id BIGINT, n INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 2147483647, 'a'), (2, 0, 'b')")
    rows = [(1, 2147483647, "a"), (2, 0, "b")]
    failing = {
        "UPDATE t SET id = id / n": DivisionByZeroError,
        "UPDATE t SET n = n + 1": ArithmeticOverflowError,
        "INSERT INTO t VALUES (3, 'three', 'c')": InvalidCastError,
        "MERGE INTO t USING (SELECT 2 AS k) src ON t.id = src.k "
        "WHEN MATCHED THEN UPDATE SET n = 1 % n": DivisionByZeroError,
    }
    for statement, error_type in failing.items():
        with pytest.raises(error_type) as caught:
            s.sql(statement)
        assert caught.value.statement == statement and caught.value.hint, statement
        assert "SQLSTATE" not in caught.value.message, statement
        _unchanged(s, 1, rows)
    with pytest.raises(ParameterTypeError) as param:
        s.sql("UPDATE t SET n = 0 WHERE id = :k", {"k": "one"})
    assert (
        param.value.parameter == "k"
        and param.value.column == len("UPDATE t SET n = 0 WHERE id = ") + 1
    )
    _unchanged(s, 1, rows)


@pytest.mark.spark
def test_too_long_partition_value_names_the_column_and_writes_nothing(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id INT, n INT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 1, 'a')")
    root = s.table("t").location
    before = sorted(os.listdir(root))
    # 'p=' + 253 bytes is the longest name that fits; escaping and UTF-8 count.
    too_long = {
        "x" * 254: 256,
        "/" * 85: 257,  # each '/' is escaped as %2F: 3 bytes in the directory name
        "é" * 127: 256,  # 2 bytes each in UTF-8
    }
    for value, length in too_long.items():
        with pytest.raises(PartitionValueTooLongError) as caught:
            s.sql(f"INSERT INTO t VALUES (2, 2, '{value}')")
        error = caught.value
        assert error.partition_column == "p" and error.length == length, value
        assert "255 bytes" in error.message and "the table is unchanged" in error.hint
        _unchanged(s, 1, [(1, 1, "a")])
        assert sorted(os.listdir(root)) == before  # no directory or file left behind
    fits = "x" * 253
    s.sql(f"INSERT INTO t VALUES (3, 3, '{fits}')")
    _unchanged(s, 2, [(1, 1, "a"), (3, 3, fits)])
