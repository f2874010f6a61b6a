"""Column rules enforced on every write path, on a table another engine (deltalake) made.

deltalake writes the rules as Delta specifies them (a ``delta.constraints.*`` property, a
non-nullable field, ``delta.generationExpression`` field metadata) and enforces them
itself, so it is the oracle for what the rules mean; DuckDB's delta_scan reads the result.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, Field, Schema, write_deltalake
from deltalake.schema import PrimitiveType

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import (
    CheckConstraintViolationError,
    GeneratedColumnMismatchError,
    IdentityColumnError,
    NotNullViolationError,
    TxSqlError,
)
from txsql.log.actions import Metadata
from txsql.log.deltalog import DeltaLog

pytestmark = [pytest.mark.spark]


def _deltalake_table(path: Path) -> str:
    schema = Schema(
        [
            Field("id", PrimitiveType("long"), nullable=False),
            Field("x", PrimitiveType("long")),
            Field("y", PrimitiveType("long"), metadata={"delta.generationExpression": "x * 2"}),
        ]
    )
    DeltaTable.create(str(path), schema=schema)
    DeltaTable(str(path)).alter.add_constraint({"x_pos": "x > 0"})
    return str(path)


def _rows(s: txsql.Session, ref: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(f"SELECT id, x, y FROM {ref}").df.collect())


def test_rules_written_by_deltalake_hold_on_every_txsql_write(spark: Any, tmp_path: Path) -> None:
    path = _deltalake_table(tmp_path / "t")
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    ref = f"delta.`{path}`"
    s.sql(f"INSERT INTO {ref} (id, x) VALUES (1, 3), (2, 5)")  # y computed from x
    s.sql(f"INSERT INTO {ref} (id, x, y) VALUES (3, 4, 8)")  # an explicit, matching y
    s.sql(f"UPDATE {ref} SET x = 10 WHERE id = 1")  # y recomputed from the new x
    expected = [(1, 10, 20), (2, 5, 10), (3, 4, 8)]
    assert _rows(s, ref) == expected
    log = DeltaLog.for_path(path)
    version = log.latest_version()
    assert version is not None
    failing: list[tuple[str, type[TxSqlError], str]] = [
        (f"INSERT INTO {ref} (id, x) VALUES (4, 1), (5, -1)", CheckConstraintViolationError, "-1"),
        (f"INSERT INTO {ref} (id, x, y) VALUES (7, 4, 9)", GeneratedColumnMismatchError, "9"),
        (f"INSERT INTO {ref} (id, x, y) VALUES (7, 4, NULL)", GeneratedColumnMismatchError, "y"),
        (f"INSERT INTO {ref} (x) VALUES (8)", NotNullViolationError, "column id"),
        (f"UPDATE {ref} SET x = -5 WHERE id = 2", CheckConstraintViolationError, "-5"),
        (
            f"MERGE INTO {ref} t USING (SELECT 9 AS id, 0 AS x) s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, x) VALUES (s.id, s.x)",
            CheckConstraintViolationError,
            "x_pos",
        ),
    ]
    files = sorted(Path(path).rglob("*.parquet"))
    for sql, error, shown in failing:
        with pytest.raises(error) as info:
            s.sql(sql)
        assert shown in info.value.message, (sql, info.value.message)
        assert "wrote nothing" in info.value.message
    assert log.latest_version() == version  # no failed statement committed anything
    assert sorted(Path(path).rglob("*.parquet")) == files  # nor left a file behind
    assert not (Path(path) / "_txsql_staging").exists()
    assert _rows(s, ref) == expected
    assert deltalake_rows(path, version, "id, x, y") == expected
    assert duckdb_rows(path, version, "id, x, y") == expected
    # deltalake enforces the same rules itself and still accepts writes after ours.
    write_deltalake(path, pa.table({"id": [10], "x": [1], "y": [2]}), mode="append")
    assert _rows(s, ref) == sorted([*expected, (10, 1, 2)])


def test_identity_column_of_a_deltalake_table_hands_out_unique_values(
    spark: Any, tmp_path: Path
) -> None:
    """delta-rs writes identity metadata (legacy writer 6, allowExplicitInsert as a string)."""
    path = str(tmp_path / "ids")
    identity = {
        "delta.identity.start": 100,
        "delta.identity.step": 10,
        "delta.identity.allowExplicitInsert": False,
    }
    schema = Schema(
        [Field("id", PrimitiveType("long"), metadata=identity), Field("v", PrimitiveType("string"))]
    )
    DeltaTable.create(path, schema=schema, configuration={"delta.minWriterVersion": "6"})
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    ref = f"delta.`{path}`"
    s.sql(f"INSERT INTO {ref} (v) VALUES ('a'), ('b')")
    s.sql(f"INSERT INTO {ref} (v) VALUES ('c')")
    with pytest.raises(IdentityColumnError):
        s.sql(f"INSERT INTO {ref} VALUES (1, 'x')")
    expected = [(100, "a"), (110, "b"), (120, "c")]
    version = DeltaLog.for_path(path).latest_version()
    assert version is not None
    assert deltalake_rows(path, version, "id, v") == expected
    field = DeltaTable(path).schema().fields[0]
    assert int(field.metadata["delta.identity.highWaterMark"]) == 120


def test_the_checks_cost_jvm_calls_per_rule_not_per_column(spark: Any) -> None:
    """Building the guard is driver work in every write: wide rows cost no more JVM round
    trips than narrow ones, and a violation still names its rule and shows the row."""
    from py4j import clientserver

    from txsql.engine.write_rules import apply_write_rules, rule_error

    sent = [0]
    real = clientserver.ClientServerConnection.send_command

    caller = threading.get_ident()

    def counting(self: Any, command: str) -> Any:
        if threading.get_ident() == caller:  # py4j's garbage collection runs elsewhere
            sent[0] += 1
        return real(self, command)

    def guarded(width: int) -> tuple[Any, int]:
        fields = [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]
        fields += [{"name": "c0", "type": "long", "nullable": True, "metadata": {}}]
        fields += [
            {"name": f"w{i}", "type": "long", "nullable": True, "metadata": {}}
            for i in range(width)
        ]
        metadata = Metadata("t", json.dumps({"type": "struct", "fields": fields}))
        columns = ["CAST(NULL AS BIGINT) AS id", "5L AS c0", *(f"1L AS w{i}" for i in range(width))]
        df = spark.range(1).selectExpr(*columns)
        assert df.columns  # the schema is fetched before counting
        sent[0] = 0
        clientserver.ClientServerConnection.send_command = counting
        try:
            checked = apply_write_rules(df, metadata)
        finally:
            clientserver.ClientServerConnection.send_command = real
        return checked, sent[0]

    guarded(0)  # first calls look up JVM classes and settings once
    (_, narrow_calls), (wide, wide_calls) = guarded(0), guarded(40)
    assert wide_calls == narrow_calls
    with pytest.raises(Exception) as failed:
        wide.write.format("noop").mode("overwrite").save()
    error = rule_error(failed.value)
    assert isinstance(error, NotNullViolationError)
    assert "column id is NULL" in error.message and '"c0":5' in error.message
