"""INSERT and MERGE with a wider source type widen the column only when the table allows it
(``delta.enableTypeWidening``) and the statement evolves the schema; the result says so.

Otherwise a value that does not fit fails with a typed error whose hint names the switch,
and nothing is committed. DuckDB's delta extension reads the widened rows back
(deltalake 1.6 refuses the typeWidening feature).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import ArithmeticOverflowError
from txsql.magics.render import banner_text
from txsql.planner.operations.widening import AUTO_MERGE_CONF

pytestmark = pytest.mark.spark

BIG = 3_000_000_000  # beyond INT
WIDENING = "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> Iterator[txsql.Session]:
    yield txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    spark.conf.set(AUTO_MERGE_CONF, "false")


def _commit(s: txsql.Session, version: int) -> list[dict[str, Any]]:
    log = Path(s.table("t").location) / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in log.read_text().splitlines()]


def _field(s: txsql.Session, name: str) -> dict[str, Any]:
    schema = json.loads(s.table("t").snapshot().metadata.schema_string)
    return next(f for f in schema["fields"] if f["name"] == name)


def _rows(s: txsql.Session) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql("SELECT id, v FROM t").df.collect())


def _check_widened(s: txsql.Session, result: Any) -> None:
    assert result.message == "widened v INT → BIGINT"
    assert "ℹ widened v INT → BIGINT" in banner_text(result, None)
    field = _field(s, "v")
    assert field["type"] == "long"
    assert field["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    # The wider schema and the rows are one commit.
    kinds = {next(iter(a)) for a in _commit(s, result.version)}
    assert {"metaData", "add"} <= kinds


def test_insert_widens_with_evolution(s: txsql.Session) -> None:
    s.sql(f"CREATE TABLE t (id INT, v INT) {WIDENING}")
    s.sql("INSERT INTO t VALUES (1, 5)")
    s.spark.conf.set(AUTO_MERGE_CONF, "true")
    # A value that fits widens nothing: the source type is INT.
    assert s.sql("INSERT INTO t VALUES (2, 6)").message == ""
    result = s.sql(f"INSERT INTO t (id, v) SELECT 3, CAST({BIG} AS BIGINT)")
    _check_widened(s, result)
    expected = [(1, 5), (2, 6), (3, BIG)]
    assert _rows(s) == expected
    assert duckdb_rows(s.table("t").location, s.table("t").version(), "id, v") == expected
    # Integer -> DOUBLE or DECIMAL is never automatic (Delta's rule): cast as before.
    assert s.sql("INSERT INTO t VALUES (4, CAST(7.0 AS DOUBLE))").message == ""
    assert _field(s, "v")["type"] == "long"
    # A DataFrame append follows INSERT's rule: pandas' int64 ids are BIGINT.
    import pandas as pd

    appended = s.table("t").append(pd.DataFrame({"id": [BIG], "v": [1]}))
    assert appended.message == "widened id INT → BIGINT"
    assert (BIG, 1) in _rows(s)


def test_insert_refused_without_the_feature_or_evolution(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id INT, v INT)")
    s.spark.conf.set(AUTO_MERGE_CONF, "true")
    with pytest.raises(ArithmeticOverflowError, match="v INT → BIGINT") as off:
        s.sql(f"INSERT INTO t SELECT 1, CAST({BIG} AS BIGINT)")
    assert "delta.enableTypeWidening" in off.value.hint
    assert "ALTER COLUMN v TYPE BIGINT" in off.value.hint
    # A wider type whose values fit is cast, as before, and the column keeps its type.
    assert s.sql("INSERT INTO t SELECT 1, CAST(5 AS BIGINT)").message == ""
    s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    s.spark.conf.set(AUTO_MERGE_CONF, "false")
    version = s.table("t").version()
    with pytest.raises(ArithmeticOverflowError) as no_evolution:
        s.sql(f"INSERT INTO t SELECT 2, CAST({BIG} AS BIGINT)")
    assert AUTO_MERGE_CONF in no_evolution.value.hint
    assert "delta.enableTypeWidening" not in no_evolution.value.hint
    assert s.table("t").version() == version and _field(s, "v")["type"] == "integer"
    assert _rows(s) == [(1, 5)]


MERGE_SOURCE = (
    f"SELECT * FROM VALUES (1, CAST({BIG} AS BIGINT)), (2, CAST(-{BIG} AS BIGINT)) AS s(id, v)"
)


@pytest.mark.parametrize(
    "clauses",
    [
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT (id, v) "
        "VALUES (s.id, s.v)",
    ],
)
def test_merge_with_schema_evolution_widens(s: txsql.Session, clauses: str) -> None:
    s.sql(f"CREATE TABLE t (id INT, v INT) {WIDENING}")
    s.sql("INSERT INTO t VALUES (1, 5), (3, 7)")
    result = s.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO t USING ({MERGE_SOURCE}) s ON t.id = s.id {clauses}"
    )
    _check_widened(s, result)
    expected = [(1, BIG), (2, -BIG), (3, 7)]
    assert _rows(s) == expected
    assert duckdb_rows(s.table("t").location, s.table("t").version(), "id, v") == expected


def test_merge_refused_without_evolution(s: txsql.Session) -> None:
    s.sql(f"CREATE TABLE t (id INT, v INT) {WIDENING}")
    s.sql("INSERT INTO t VALUES (1, 5)")
    with pytest.raises(ArithmeticOverflowError) as refused:
        s.sql(
            f"MERGE INTO t USING ({MERGE_SOURCE}) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    assert "MERGE WITH SCHEMA EVOLUTION" in refused.value.hint
    assert s.table("t").version() == 1 and _rows(s) == [(1, 5)]
    # The session conf is the same switch as WITH SCHEMA EVOLUTION.
    s.spark.conf.set(AUTO_MERGE_CONF, "true")
    result = s.sql(
        f"MERGE INTO t USING ({MERGE_SOURCE}) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    )
    _check_widened(s, result)
    assert _rows(s) == [(1, BIG)]


def test_no_silent_overflow_with_ansi_mode_off(s: txsql.Session) -> None:
    # With ANSI mode off Spark's CAST wraps a BIGINT around into an INT: txsql checks the
    # fit itself, so the write fails as it does with ANSI mode on.
    s.sql("CREATE TABLE t (id INT, v INT)")
    s.sql("INSERT INTO t VALUES (1, 5)")
    s.spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        with pytest.raises(ArithmeticOverflowError, match="INT column v") as inserted:
            s.sql(f"INSERT INTO t SELECT 2, CAST({BIG} AS BIGINT)")
        assert "delta.enableTypeWidening" in inserted.value.hint
        with pytest.raises(ArithmeticOverflowError, match="INT column v"):
            s.sql(
                f"MERGE INTO t USING ({MERGE_SOURCE}) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = s.v + 1"
            )
        s.sql("INSERT INTO t SELECT 3, CAST(NULL AS BIGINT)")  # values that fit still do
        s.sql("INSERT INTO t SELECT 4, CAST(-7 AS BIGINT)")
    finally:
        s.spark.conf.set("spark.sql.ansi.enabled", "true")
    assert _rows(s) == [(1, 5), (3, None), (4, -7)]
