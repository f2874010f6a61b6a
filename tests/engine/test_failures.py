"""Failures the user sees are typed txsql errors naming the real cause."""

from __future__ import annotations

import glob
import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

import txsql
import txsql.errors as errors
from txsql.engine.failures import typed_engine_error
from txsql.planner.sql.script import parse_script

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

WORKER_TEXT = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/x/txsql/dv/store.py", line 98, in _read_framed
    raise CorruptDeletionVectorError(
txsql.errors.CorruptDeletionVectorError: deletion vector file /t/deletion_vector_1.bin: \
checksum mismatch at offset 1, stored CRC-32 0xffffffff but the data hashes to 0x5241601f
How to fix: restore it
"""
READ_TEXT = """An error occurred while calling o1.collectToPython.
: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while \
reading file file:///t/part-0.parquet.  SQLSTATE: KD001
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(x.scala:904)
Caused by: java.lang.RuntimeException: file:/t/part-0.parquet is not a Parquet file. \
Expected magic number at tail, but found [40, 4, 49, 0]
"""


def test_worker_error_becomes_its_own_type() -> None:
    typed = typed_engine_error(RuntimeError(WORKER_TEXT))
    assert isinstance(typed, errors.CorruptDeletionVectorError)
    assert "deletion_vector_1.bin" in typed.message and "checksum mismatch" in typed.message
    assert typed.hint == "restore it"


def test_unreadable_data_file_names_the_file_and_reason() -> None:
    typed = typed_engine_error(RuntimeError(READ_TEXT))
    assert isinstance(typed, errors.DataFileError)
    assert "file:///t/part-0.parquet" in typed.message
    assert "not a Parquet file" in typed.message
    missing = typed_engine_error(
        RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/t/p.parquet. SQLSTATE: 42K03")
    )
    assert isinstance(missing, errors.DataFileError) and "does not exist" in missing.message


def test_unrecognised_failures_are_left_alone() -> None:
    assert typed_engine_error(ValueError("[DIVIDE_BY_ZERO] Division by zero")) is None
    assert isinstance(typed_engine_error(RecursionError()), errors.ExpressionTooDeepError)


def test_every_error_class_is_exported_by_txsql_errors() -> None:
    from txsql.magics import errors as magic_errors
    from txsql.planner.operations import restore, vacuum
    from txsql.txn import guards

    defined = [
        v
        for v in vars(errors).values()
        if inspect.isclass(v) and issubclass(v, (errors.TxSqlError, errors.TxSqlWarning))
    ]
    assert sorted(errors.__all__) == sorted(c.__name__ for c in defined)
    assert vacuum.RetentionTooShortError is errors.RetentionTooShortError
    assert guards.AppendOnlyTableError is errors.AppendOnlyTableError
    assert restore.RestoreError is errors.RestoreError
    assert magic_errors.MagicUsageError is errors.MagicUsageError
    for cls in defined:
        assert cls.__doc__, cls  # every class says what it means


def test_nested_parentheses_get_a_typed_error_with_position() -> None:
    script = "SELECT 1;\nSELECT " + "(" * 3000 + "1" + ")" * 3000
    with pytest.raises(errors.ExpressionTooDeepError) as caught:
        parse_script(script)
    assert caught.value.line == 2 and caught.value.column == len("SELECT ") + 3000
    assert "3000 levels" in caught.value.message and caught.value.hint


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _rows(s: txsql.Session, query: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in s.sql(query).df.collect())


def test_damaged_dv_file_is_a_typed_error_and_changes_nothing(s: txsql.Session) -> None:
    s.sql("CREATE TABLE d (id INT, v STRING) TBLPROPERTIES ('delta.enableDeletionVectors'='true')")
    s.sql("INSERT INTO d SELECT CAST(id AS INT), 'x' FROM range(20)")
    s.sql("DELETE FROM d WHERE id % 3 = 0")
    # Not read before the damage: a scan caches the expanded DV (DV files are immutable).
    expected = [(i, "x") for i in range(20) if i % 3]
    version = s.table("d").version()
    (dv,) = glob.glob(os.path.join(s.table("d").location, "deletion_vector_*.bin"))
    good = Path(dv).read_bytes()
    damages = {
        "checksum mismatch": good[:-4] + b"\x00\x00\x00\x00",
        "truncated": good[:12],
        "does not exist": None,
    }
    for cause, damaged in damages.items():
        if damaged is None:
            os.unlink(dv)
        else:
            Path(dv).write_bytes(damaged)
        # A bare count(*) is answered from the log (as Delta does): the WHERE makes it scan.
        scans = ("SELECT count(*) FROM d WHERE id >= 0", "UPDATE d SET v = 'y' WHERE id >= 0")
        for statement in scans:
            with pytest.raises(errors.CorruptDeletionVectorError) as caught:
                s.sql(statement).df.collect() if statement.startswith("SELECT") else s.sql(
                    statement
                )
            assert os.path.basename(dv) in caught.value.message, statement
            assert cause in caught.value.message, (cause, caught.value.message)
            assert "Fix the statement" not in caught.value.hint
        Path(dv).write_bytes(good)
    assert s.table("d").version() == version
    assert _rows(s, "SELECT * FROM d") == expected


def test_damaged_data_file_is_a_typed_error(s: txsql.Session) -> None:
    s.sql("CREATE TABLE p (id INT, v STRING)")
    s.sql("INSERT INTO p SELECT CAST(id AS INT), 'x' FROM range(10)")
    part = sorted(glob.glob(os.path.join(s.table("p").location, "*.parquet")))[0]
    data = Path(part).read_bytes()
    Path(part).write_bytes(data[: len(data) // 2])
    with pytest.raises(errors.DataFileError) as caught:
        s.sql("UPDATE p SET v = 'y' WHERE id >= 0")
    assert os.path.basename(part) in caught.value.message
    assert "not a Parquet file" in caught.value.message
    with pytest.raises(errors.DataFileError):
        s.sql("SELECT * FROM p").to_pandas()
    Path(part).write_bytes(data)
    assert s.table("p").version() == 1


def test_long_or_chain_is_one_flat_predicate() -> None:
    import sqlglot

    from txsql.log.predicates import Or, is_deterministic, split_predicate
    from txsql.planner.sql.dialect import DIALECT
    from txsql.planner.sql.predicates import to_predicate

    chain = " OR ".join(f"(id = {i})" for i in range(5000))
    condition = sqlglot.parse_one(f"SELECT 1 WHERE {chain}", read=DIALECT).args["where"].this
    schema = {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True}]}
    predicate = to_predicate(condition, schema)
    assert isinstance(predicate, Or) and len(predicate.children) == 5000
    assert is_deterministic(predicate)
    split_predicate(predicate, [])  # the pruning entry point recursed once per term before


def test_long_or_chain_in_delete_agrees_with_duckdb(s: txsql.Session) -> None:
    # Spark itself plans a 500-deep OR slowly (seconds), so one statement is run here;
    # UPDATE and MERGE build their predicate through the same to_predicate.
    s.sql("CREATE TABLE o (id INT, v STRING)")
    s.sql("INSERT INTO o SELECT CAST(id AS INT), 'x' FROM range(40)")
    statement = "DELETE FROM o WHERE " + " OR ".join(f"id = {i * 7}" for i in range(500))
    s.sql(statement)
    duck = duckdb.connect()
    duck.execute("CREATE TABLE o AS SELECT CAST(range AS INT) AS id, 'x' AS v FROM range(40)")
    duck.execute(statement)
    assert _rows(s, "SELECT * FROM o") == sorted(duck.execute("SELECT * FROM o").fetchall())


def test_script_error_names_earlier_commits(s: txsql.Session) -> None:
    with pytest.raises(errors.SqlError) as caught:
        s.sql("CREATE TABLE e (id INT); INSERT INTO e VALUES (1); INSERT INTO e SELECT nosuch")
    hint = caught.value.hint
    assert "table is unchanged" not in hint
    assert "CREATE TABLE e v0" in hint and "WRITE e v1" in hint
    with pytest.raises(errors.SqlError) as alone:
        s.sql("INSERT INTO e SELECT nosuch")
    assert "the table is unchanged" in alone.value.hint
    assert _rows(s, "SELECT * FROM e") == [(1,)]
