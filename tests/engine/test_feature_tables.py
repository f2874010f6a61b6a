"""Tables using the reader features of issue 33 read like DuckDB's delta extension reads
them, at every version: type widening (old files read at the new type), VARIANT
(unshredded and shredded), collated strings (compared and sorted under the collation),
and geospatial columns refused by column and feature."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import txsql
from tests.engine.feature_tables import (
    COLLATED_ROWS,
    SHREDDED,
    collated_table,
    field,
    metadata,
    protocol,
    shredded_table,
    widened_table,
    write_log,
)
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import Column, Comparison, Literal
from txsql.planner.sql.predicates import prune_files

pytestmark = pytest.mark.spark

MODERN = "delta-modern"


def plain(value: Any) -> Any:
    """Spark's Rows as dicts, so rows compare with DuckDB's structs."""
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def rows(result: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in result.collect()]


def spark_rows(session: txsql.Session, path: Path, version: int) -> list[Any]:
    rows = session.table(str(path)).to_spark(version).collect()
    return sorted((tuple(plain(v) for v in r) for r in rows), key=repr)


def oracle_rows(path: Path, version: int) -> list[Any]:
    return sorted(duckdb_rows(str(path), version, "*"), key=repr)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_type_widening_fixture_reads_like_duckdb(
    spark: Any, fixtures_dir: Path, version: int
) -> None:
    path = fixtures_dir / MODERN / "type-widening"
    session = txsql.Session(spark=spark, warehouse=str(fixtures_dir))
    assert spark_rows(session, path, version) == oracle_rows(path, version)


def test_widened_table_reads_every_widening_like_duckdb(spark: Any, tmp_path: Path) -> None:
    """Partition, top-level, struct field, array element and map value widenings, with a
    byte -> DECIMAL(5, 2) column that Spark's vectorized reader cannot read directly."""
    path = tmp_path / "widened"
    widened_table(path)
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    for version in (0, 1, 2):
        assert spark_rows(session, path, version) == oracle_rows(path, version), version
    types = session.table(str(path)).to_spark(2).schema.simpleString()
    assert types == (
        "struct<p:bigint,dp:timestamp_ntz,f:double,b:decimal(5,2),s:struct<x:int,"
        "y:decimal(8,3)>,a:array<bigint>,m:map<string,double>>"
    )


def test_widened_table_takes_dml_on_rows_of_old_files(spark: Any, tmp_path: Path) -> None:
    """UPDATE, MERGE and DELETE of rows in the narrow file, then OPTIMIZE: every version
    read like DuckDB, the type changes kept, new files at the wide types."""
    path = tmp_path / "widened"
    widened_table(path)
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    table = f"delta.`{path}`"
    log = DeltaLog.for_path(str(path))
    schema = log.snapshot().metadata.schema_string
    statements = [
        f"UPDATE {table} SET f = f * 2, s = named_struct('x', s.x + 70000, 'y', s.y) "
        "WHERE b = -128",
        f"MERGE INTO {table} t USING (SELECT CAST(5 AS DECIMAL(5, 2)) AS b) src ON t.b = src.b "
        "WHEN MATCHED THEN UPDATE SET a = array(CAST(1 AS BIGINT) << 40)",
        f"INSERT INTO {table} VALUES (8, TIMESTAMP_NTZ'2025-01-01 00:00:00', 0.5, 1.5, "
        "named_struct('x', 1, 'y', 1.5), array(3), map('z', 2.5))",
        f"DELETE FROM {table} WHERE p = {2**40}",
        f"OPTIMIZE {table}",
    ]
    version = 0
    for sql in statements:
        session.sql(sql)
        version = log.latest_version() or 0
        assert spark_rows(session, path, version) == oracle_rows(path, version), sql
        assert log.snapshot(version).metadata.schema_string == schema, sql
    updated = [r for r in oracle_rows(path, version) if r[1] == dt.datetime(2024, 9, 9)]
    assert len(updated) == 1 and updated[0][3] == Decimal("-128.00")
    assert updated[0][4]["x"] == 69700 and updated[0][2] == pytest.approx(-2.2)
    for f in log.snapshot(version).files:
        written = pq.read_schema(path / f.path)
        assert written.field("s").type.field("x").type == pa.int32()
        assert written.field("b").type == pa.decimal128(5, 2)


def test_float_bounds_written_before_widening_do_not_skip_the_file(
    spark: Any, tmp_path: Path
) -> None:
    # The old file's stats say min f = -1.1 (a FLOAT); the row reads as -1.100000023841858.
    path = tmp_path / "widened"
    widened_table(path)
    snapshot = DeltaLog.for_path(str(path)).snapshot(2)
    kept, _ = prune_files(snapshot, Comparison("<", Column("f"), Literal(-1.10000001)))
    # Which file holds FLOAT bounds is not recorded: f's bounds are not used at all.
    assert sorted(f.path for f in kept) == ["new.parquet", "p=7/old.parquet"]
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    found = rows(session.sql(f"SELECT f FROM delta.`{path}` WHERE f < -1.10000001"))
    assert found == [(-1.100000023841858,)]
    oracle = duckdb_rows(str(path), 2, "f")
    assert [r for r in oracle if r[0] < -1.10000001] == found


def variant_json(session: txsql.Session, path: Path, version: int, columns: list[str]) -> list[Any]:
    """Each row as JSON (variants inside included), nulls kept, parsed back."""
    df = session.table(str(path)).to_spark(version)
    pairs = ", ".join(f"'{c}', `{c}`" for c in columns)
    texts = df.selectExpr(
        f"to_json(named_struct({pairs}), map('ignoreNullFields', 'false'))"
    ).collect()
    return sorted((json.loads(r[0]) for r in texts), key=repr)


def duckdb_json(path: Path, version: int, columns: list[str]) -> list[Any]:
    rows = duckdb_rows(str(path), version, ", ".join(f'"{c}"' for c in columns))
    return sorted((dict(zip(columns, r)) for r in rows), key=repr)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_unshredded_variant_fixture_reads_like_duckdb(
    spark: Any, fixtures_dir: Path, version: int
) -> None:
    path = fixtures_dir / MODERN / "unshredded-variant"
    session = txsql.Session(spark=spark, warehouse=str(fixtures_dir))
    df = session.table(str(path)).to_spark(version)
    assert df.schema["v"].dataType.typeName() == "variant"
    columns = df.columns
    assert variant_json(session, path, version, columns) == duckdb_json(path, version, columns)
    # variant_get reads the key every row's JSON holds; deltalake reads the same ids.
    got = df.selectExpr("id", "variant_get(v, '$.key', 'bigint')").collect()
    assert all(r[0] == r[1] for r in got) and len(got) == 100 + version
    assert sorted((r[0],) for r in got) == deltalake_rows(str(path), version, "id")


def test_shredded_variant_reads_back_the_values_written(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "shredded"
    shredded_table(spark, path)
    physical = pq.read_schema(path / "part-0.parquet").field("v").type
    assert "typed_value" in [physical.field(i).name for i in range(physical.num_fields)]
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    got = rows(session.sql(f"SELECT id, to_json(v) FROM delta.`{path}` ORDER BY id"))
    assert [json.loads(text) for _, text in got] == [json.loads(t) for t in SHREDDED]
    # DuckDB reassembles the shredded values too (deltalake refuses variantShredding).
    assert [(i, json.loads(text)) for i, text in got] == duckdb_rows(str(path), 0, "*")


def test_collations_fixture_reads_collated_string_types(spark: Any, fixtures_dir: Path) -> None:
    path = fixtures_dir / MODERN / "collations-table"
    session = txsql.Session(spark=spark, warehouse=str(fixtures_dir))
    df = session.table(str(path)).to_spark(0)
    assert df.schema.simpleString() == (
        "struct<id:int,utf8_binary_col:string,utf8_lcase_col:string collate UTF8_LCASE,"
        "unicode_col:string collate UNICODE>"
    )
    assert df.collect() == [] == duckdb_rows(str(path), 0, "*")
    described = rows(session.sql(f"DESCRIBE TABLE delta.`{path}`"))
    assert described[2][:2] == ("utf8_lcase_col", "string collate UTF8_LCASE")


def test_collated_columns_compare_and_sort_under_their_collation(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "collated"
    collated_table(path)
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    ref = f"delta.`{path}`"
    assert sorted(rows(session.sql(f"SELECT * FROM {ref}"))) == duckdb_rows(str(path), 0, "*")
    assert sorted(COLLATED_ROWS) == duckdb_rows(str(path), 0, "*")
    assert sorted(COLLATED_ROWS) == deltalake_rows(str(path), 0, "*")
    # Binary collation would find only id 2, and only partition 'x'.
    assert sorted(rows(session.sql(f"SELECT id FROM {ref} WHERE name = 'ABC'"))) == [(1,), (2,)]
    assert sorted(rows(session.sql(f"SELECT id FROM {ref} WHERE k = 'x'"))) == [
        (1,),
        (2,),
        (3,),
        (4,),
    ]
    # Binary order puts 'ABC' and 'Abd' before 'abc'; UTF8_LCASE compares lowercased.
    ordered = rows(session.sql(f"SELECT name FROM {ref} ORDER BY name, id"))
    assert [n for (n,) in ordered] == ["abc", "ABC", "Abd", "b"]


def test_geospatial_fixture_is_refused_by_column_and_feature(
    spark: Any, fixtures_dir: Path
) -> None:
    session = txsql.Session(spark=spark, warehouse=str(fixtures_dir))
    with pytest.raises(UnsupportedFeatureError, match=r"column geom .*geospatial"):
        session.table(str(fixtures_dir / MODERN / "table-with-geo")).to_spark(0)


def test_unknown_types_and_features_are_typed_errors_naming_them(
    spark: Any, tmp_path: Path
) -> None:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    odd = tmp_path / "odd-type"
    odd.mkdir()
    write_log(odd, [[protocol([], ["appendOnly"]), metadata([field("c", "tensor(3)")], [])]])
    with pytest.raises(SchemaError, match=r"column c: unknown data type 'tensor\(3\)'"):
        session.sql(f"SELECT * FROM delta.`{odd}`").collect()
    future = tmp_path / "future"
    future.mkdir()
    write_log(
        future, [[protocol(["warpDrive"], ["warpDrive"]), metadata([field("c", "long")], [])]]
    )
    with pytest.raises(UnsupportedFeatureError, match="warpDrive"):
        session.sql(f"SELECT * FROM delta.`{future}`").collect()


def test_a_collation_spark_does_not_know_is_a_typed_error(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "bogus"
    path.mkdir()
    bogus = field("s", "string", {"__COLLATIONS": {"s": "icu.zz_QQ_bogus"}})
    write_log(path, [[protocol([], ["collations", "domainMetadata"]), metadata([bogus], [])]])
    session = txsql.Session(spark=spark, warehouse=str(tmp_path))
    with pytest.raises(SchemaError, match=r"column\(s\) s .*COLLATION_INVALID_NAME"):
        session.table(str(path)).to_spark()
