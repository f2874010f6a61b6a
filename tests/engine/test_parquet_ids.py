"""Parquet field ids on every field (column mapping 'id' mode, icebergCompatV2), and the
other rules of icebergCompatV2 in the files and the log txsql writes.

The oracle for the ids is Delta Spark itself: the fixture's data files, written by Delta
Spark, carry the field id of every field down to array elements and map entries; every
file txsql adds must carry exactly the same tree (read with pyarrow). DuckDB and
deltalake read what txsql writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import UnsupportedFeatureError
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark

ICEBERG = "delta-modern/table-with-icebegCompatV2Enabled"


def id_tree(fields: Any) -> list[Any]:
    """(name, field id, children) of every field, as the Parquet footer says."""
    out = []
    for field in fields:
        raw = (field.metadata or {}).get(b"PARQUET:field_id")
        out.append((field.name, int(raw) if raw else None, id_tree(_children(field.type))))
    return out


def _children(data_type: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(data_type):
        return list(data_type)
    if pa.types.is_map(data_type):
        return [data_type.key_field, data_type.item_field]
    if pa.types.is_list(data_type):
        return [data_type.value_field]
    return []


def _adds(path: str) -> list[dict[str, Any]]:
    """Every add action of the log, from the JSON commits."""
    adds = []
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds.append(action["add"])
    return adds


def test_iceberg_table_files_carry_every_field_id(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path = str(tmp_path / "ice")
    shutil.copytree(fixtures_dir / ICEBERG, path)
    written_by_spark = {a["path"] for a in _adds(path)}
    expected = id_tree(pq.read_schema(Path(path) / sorted(written_by_spark)[0]))
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    t = f"delta.`{path}`"
    s.sql(f"INSERT INTO {t} SELECT * FROM {t} WHERE IntegerType IS NOT NULL LIMIT 1")
    s.sql(f"UPDATE {t} SET LongType = LongType + 1 WHERE IntegerType = 1")
    s.sql(f"DELETE FROM {t} WHERE IntegerType = 2")
    s.sql(f"OPTIMIZE {t}")
    adds = _adds(path)
    ours = [a for a in adds if a["path"] not in written_by_spark]
    assert ours
    for add in ours:
        assert id_tree(pq.read_schema(Path(path) / add["path"])) == expected, add["path"]
        assert "deletionVector" not in add or add["deletionVector"] is None  # copy-on-write
        assert json.loads(add["stats"])["numRecords"] >= 0
    version = DeltaLog.for_path(path).latest_version()
    assert version is not None
    columns = '"IntegerType", "LongType", "StringType", "nested_struct"'
    assert duckdb_rows(path, version, columns) == deltalake_rows(path, version, columns)
    keys = [r[0] for r in duckdb_rows(path, version, '"IntegerType"')]
    assert 2 not in keys


def test_new_iceberg_table_materializes_partitions_and_never_writes_dvs(
    spark: Any, tmp_path: Path
) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql(
        # p first: DuckDB's extension misreads a mapped partition column placed later.
        "CREATE TABLE ice (p STRING, id BIGINT, s STRUCT<x: INT>) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true', "
        "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')"
    )
    s.sql("INSERT INTO ice SELECT CAST(id % 2 AS STRING), id, named_struct('x', 1) FROM range(6)")
    s.sql("DELETE FROM ice WHERE id = 3")
    location = s.table("ice").location
    snapshot = DeltaLog.for_path(location).snapshot()
    assert "icebergCompatV2" in (snapshot.protocol.writer_features or ())
    assert all(f.deletion_vector is None for f in snapshot.files)
    physical = snapshot.schema_json["fields"][0]["metadata"]["delta.columnMapping.physicalName"]
    for f in snapshot.files:
        values = pq.read_table(Path(location) / f.path).column(physical).to_pylist()
        assert set(values) == {f.partition_values[physical]}  # the column is in the file
    expected = [(i, str(i % 2)) for i in (0, 1, 2, 4, 5)]
    assert duckdb_rows(location, snapshot.version, "id, p") == expected
    assert deltalake_rows(location, snapshot.version, "id, p") == expected


def test_iceberg_table_without_nested_ids_refused(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    with pytest.raises(UnsupportedFeatureError, match="nested field id") as refused:
        s.sql(
            "CREATE TABLE ice (id BIGINT, a ARRAY<INT>) TBLPROPERTIES "
            "('delta.enableIcebergCompatV2' = 'true', 'delta.columnMapping.mode' = 'name')"
        )
    assert refused.value.hint
    assert not (tmp_path / "ice" / "_delta_log").exists()


def test_id_mode_table_files_carry_ids(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE i (a INT, s STRUCT<x: INT, y: STRING>, m MAP<STRING, INT>) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')"
    )
    s.sql("INSERT INTO i VALUES (1, named_struct('x', 2, 'y', 'q'), map('k', 3))")
    s.sql("UPDATE i SET a = 5")
    location = s.table("i").location
    snapshot = DeltaLog.for_path(location).snapshot()
    ids = {
        f["metadata"]["delta.columnMapping.physicalName"]: f["metadata"]["delta.columnMapping.id"]
        for f in snapshot.schema_json["fields"]
    }
    for f in snapshot.files:
        tree = id_tree(pq.read_schema(Path(location) / f.path))
        assert {name: field_id for name, field_id, _ in tree} == ids
        assert all(child[1] is not None for child in tree[1][2])  # the struct's fields too
    assert duckdb_rows(location, snapshot.version, "a, s") == [(5, {"x": 2, "y": "q"})]
    assert deltalake_rows(location, snapshot.version, "a, m") == [(5, [("k", 3)])]
