"""VARIANT columns written by txsql: CREATE, INSERT/UPDATE/MERGE with parse_json, time
travel, CTAS. Oracle: DuckDB's delta extension and deltalake read the same values (as
JSON); the Parquet files are inspected with pyarrow: unshredded, no min/max for VARIANT.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import txsql
from tests.engine.feature_tables import shredded_table
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark


def _ours(s: txsql.Session, table: str, version: int | None = None) -> list[Any]:
    travel = f" VERSION AS OF {version}" if version is not None else ""
    got = s.sql(f"SELECT id, to_json(doc) FROM {table}{travel} ORDER BY id").collect()
    return [(i, json.loads(text) if text is not None else None) for i, text in got]


def _duckdb(path: str, version: int) -> list[Any]:
    # DuckDB hands VARIANT values over as Python values (dicts, lists, numbers, strings).
    return sorted(duckdb_rows(path, version, "id, doc"))


def _unshredded_without_bounds(path: str) -> None:
    snapshot = DeltaLog.for_path(path).snapshot()
    for f in snapshot.files:
        doc = pq.read_schema(Path(path) / f.path).field("doc").type
        assert sorted(doc.field(i).name for i in range(doc.num_fields)) == ["metadata", "value"]
        stats = json.loads(f.stats or "{}")
        assert "doc" not in stats.get("minValues", {}) and "doc" not in stats.get("maxValues", {})


def test_variant_table_round_trip(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE docs (id INT, doc VARIANT)")
    path = s.table("docs").location
    protocol = DeltaLog.for_path(path).snapshot().protocol
    assert "variantType" in (protocol.reader_features or ())
    s.sql(
        """INSERT INTO docs VALUES (1, parse_json('{"a": 1, "tags": ["x", "y"]}')),
        (2, parse_json('{"a": 2.5, "b": {"c": null}}')), (3, CAST(NULL AS VARIANT)),
        (4, try_parse_json('not json'))"""
    )
    s.sql(
        """UPDATE docs SET doc = parse_json('{"a": 10}') WHERE variant_get(doc, '$.a', 'int') = 1"""
    )
    s.sql(
        "MERGE INTO docs t USING (SELECT 2 AS id UNION ALL SELECT 5) src ON t.id = src.id "
        """WHEN MATCHED THEN UPDATE SET doc = parse_json('[1, 2, 3]') """
        """WHEN NOT MATCHED THEN INSERT (id, doc) VALUES (src.id, parse_json('"five"'))"""
    )
    expected = [(1, {"a": 10}), (2, [1, 2, 3]), (3, None), (4, None), (5, "five")]
    assert _ours(s, "docs") == expected
    assert _duckdb(path, 3) == expected
    # deltalake hands a VARIANT over as its two binaries: rows and nulls must agree.
    theirs = deltalake_rows(path, 3, "id, doc IS NULL")
    assert theirs == [(i, v is None) for i, v in expected]
    assert _ours(s, "docs", 1)[0] == (1, {"a": 1, "tags": ["x", "y"]})  # time travel
    found = s.sql("SELECT id FROM docs WHERE variant_get(doc, '$.a', 'int') = 10").collect()
    assert [r.id for r in found] == [1]
    s.sql("CREATE TABLE copy AS SELECT * FROM docs WHERE id < 3")
    assert _ours(s, "copy") == expected[:2]
    _unshredded_without_bounds(path)


def test_shredded_table_takes_writes_unshredded(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "shredded"
    shredded_table(spark, path)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    table = f"delta.`{path}`"
    before = _ours_v(s, table)
    s.sql(f"INSERT INTO {table} SELECT id + 100, v FROM {table}")
    s.sql(f"DELETE FROM {table} WHERE id = 1")
    s.sql(f"OPTIMIZE {table}")
    version = DeltaLog.for_path(str(path)).latest_version()
    assert version is not None
    after = _ours_v(s, table)
    assert after == sorted([r for r in before if r[0] != 1] + [(i + 100, v) for i, v in before])
    assert sorted(duckdb_rows(str(path), version, "*"), key=repr) == sorted(after, key=repr)
    for f in DeltaLog.for_path(str(path)).snapshot().files:
        v = pq.read_schema(path / f.path).field("v").type
        assert "typed_value" not in [v.field(i).name for i in range(v.num_fields)]


def _ours_v(s: txsql.Session, table: str) -> list[Any]:
    got = s.sql(f"SELECT id, to_json(v) FROM {table}").collect()
    return sorted((i, json.loads(t) if t is not None else None) for i, t in got)


def test_variant_path_syntax_reads_and_writes(spark: Any, tmp_path: Path) -> None:
    """``doc:a.b``, ``doc:l[1]``, ``doc:['k k']`` and ``::`` casts in SELECT, WHERE, UPDATE
    and MERGE, as Spark 4 evaluates them; DuckDB's json_extract on the stored values is the
    oracle. A path on a STRING column is refused with a hint, not Spark's internal error."""
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE docs (id INT, doc VARIANT, js STRING)")
    s.sql(
        """INSERT INTO docs VALUES
        (1, parse_json('{"a": {"b": 2}, "l": [5, 6], "k k": "x"}'), '{"a": 1}'),
        (2, parse_json('{"a": {"b": 3}, "l": [7], "k k": "y"}'), '{"a": 2}')"""
    )
    got = s.sql(
        "SELECT id, doc:a.b::int AS b, doc:l[1]::int AS second, doc:['k k']::string AS k "
        "FROM docs ORDER BY id"
    ).collect()
    assert [tuple(r) for r in got] == [(1, 2, 6, "x"), (2, 3, None, "y")]
    assert [r.id for r in s.sql("SELECT id FROM docs WHERE doc:a.b::int = 3").collect()] == [2]
    s.sql("UPDATE docs SET id = doc:a.b::int * 10 WHERE doc:['k k']::string = 'x'")
    s.sql(
        "MERGE INTO docs t USING (SELECT 3 AS b) s ON t.doc:a.b::int = s.b "
        "WHEN MATCHED THEN UPDATE SET id = t.doc:l[0]::int"
    )
    path = s.table("docs").location
    version = DeltaLog.for_path(path).latest_version()
    assert version is not None
    rows = duckdb_rows(path, version, "id, doc")
    assert sorted((i, d["a"]["b"]) for i, d in rows) == [(7, 3), (20, 2)]
    with pytest.raises(txsql.errors.SqlError, match="VARIANT columns only") as refused:
        s.sql("SELECT js:a FROM docs").collect()
    assert "get_json_object" in (refused.value.hint or "")
