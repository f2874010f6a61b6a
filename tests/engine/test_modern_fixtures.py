"""Tables people already have, written by txsql: every statement family on a copy of each
``delta-modern`` fixture (and on a table the ``deltalake`` package creates), with DuckDB's
delta extension and deltalake reading the same rows as txsql after every step.

A fixture txsql still refuses is asserted refused by name, so this module states what
txsql does with each table feature of 2024-26.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    MapType,
    NumericType,
    ShortType,
    StructType,
    VariantVal,
)

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.engine.scan import scan_snapshot
from txsql.errors import SchemaError, TxSqlError, UnsupportedFeatureError
from txsql.log.actions import Action, CommitInfo, DomainMetadata, Protocol
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark

MODERN = "delta-modern"
COMMIT = re.compile(r"\d{20}\.json")
UUID_CHECKPOINT = re.compile(r"\d{20}\.checkpoint\.[0-9a-f-]{36}\.parquet")


def _quoted(columns: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def _python(value: Any) -> Any:
    """Spark's values as DuckDB hands them over: VARIANTs as Python values, rows as dicts."""
    if isinstance(value, VariantVal):
        return value.toPython()
    if isinstance(value, Row):
        return {k: _python(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    return value


def _txsql_rows(s: txsql.Session, path: str, version: int, columns: list[str]) -> list[Any]:
    df = s.table(path).to_spark(version=version).select(*columns)
    return sorted((tuple(_python(v) for v in r) for r in df.collect()), key=repr)


def _naive(value: Any) -> Any:
    # DuckDB returns TIMESTAMP columns as UTC-aware datetimes, Spark as naive UTC ones.
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    # deltalake hands maps over as lists of (key, value) pairs, the others as dicts.
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return {k: _naive(v) for k, v in value}
    if isinstance(value, list):
        return [_naive(v) for v in value]
    if isinstance(value, dict):
        return {k: _naive(v) for k, v in value.items()}
    return value


def _same(left: list[Any], right: list[Any]) -> bool:
    def norm(rows: list[Any]) -> list[Any]:
        return sorted((tuple(_naive(v) for v in r) for r in rows), key=repr)

    return norm(left) == norm(right)


def _collectable(data_type: DataType) -> bool:
    if isinstance(data_type, MapType):
        hashable = not isinstance(data_type.keyType, (ArrayType, MapType, StructType))
        return hashable and _collectable(data_type.valueType)
    if isinstance(data_type, ArrayType):
        return _collectable(data_type.elementType)
    if isinstance(data_type, StructType):
        return all(_collectable(f.dataType) for f in data_type.fields)
    return True


class Workout:
    """One table under test: runs a statement, then checks every reader at that version."""

    def __init__(
        self, s: txsql.Session, path: str, duckdb: bool = True, deltalake: bool = True
    ) -> None:
        self.s, self.path, self.duckdb, self.deltalake = s, path, duckdb, deltalake
        self.table = f"delta.`{path}`"
        fields = s.table(path).to_spark().schema.fields
        # PySpark cannot collect a map keyed by arrays or structs into a dict: compare the rest.
        self.columns = [f.name for f in fields if _collectable(f.dataType)]
        # The statements do arithmetic on the key (+1000): the first numeric column wide
        # enough for it.
        numeric = [
            f.name
            for f in fields
            if isinstance(f.dataType, NumericType)
            and not isinstance(f.dataType, (ByteType, ShortType))
        ]
        self.key = (numeric or self.columns)[0]

    def check(self, version: int) -> list[Any]:
        ours = _txsql_rows(self.s, self.path, version, self.columns)
        cols = _quoted(self.columns)
        if self.duckdb:
            assert _same(duckdb_rows(self.path, version, cols), ours), f"duckdb at v{version}"
        if self.deltalake:
            theirs = deltalake_rows(self.path, version, cols)
            assert _same(theirs, ours), f"deltalake at v{version}"
        return ours

    def run(self, sql: str) -> int:
        self.s.sql(sql.replace("{t}", self.table))
        version = DeltaLog.for_path(self.path).latest_version()
        assert version is not None
        self.check(version)
        return version

    def check_checkpoint(self, version: int) -> None:
        """The checkpoint of ``version`` is of the kind the table asks for: UUID-named V2
        with a ``checkpointMetadata`` row under ``checkpointPolicy = 'v2'``, else classic
        (with ``checkpointMetadata`` when the table has the v2Checkpoint feature)."""
        snapshot = DeltaLog.for_path(self.path).snapshot(version)
        v2_table = "v2Checkpoint" in (snapshot.protocol.writer_features or ())
        uuid_named = v2_table and snapshot.configuration.get("delta.checkpointPolicy") == "v2"
        log_dir = Path(self.path) / "_delta_log"
        pattern = UUID_CHECKPOINT if uuid_named else re.compile(r"\d{20}\.checkpoint\.parquet")
        found = [p for p in log_dir.iterdir() if p.name.startswith(f"{version:020d}.checkpoint")]
        assert [p.name for p in found if pattern.fullmatch(p.name)] == [p.name for p in found]
        assert found, f"no checkpoint at v{version}"
        table = pq.read_table(found[0])
        if v2_table:
            marks = [m for m in table.column("checkpointMetadata").to_pylist() if m]
            assert [m["version"] for m in marks] == [version]

    def keys(self) -> list[Any]:
        rows = self.s.sql(f"SELECT {self.key} FROM {self.table} ORDER BY 1").collect()
        return [r[0] for r in rows if r[0] is not None]

    def everything(self) -> list[int]:
        """Read every version, then INSERT, UPDATE, DELETE, MERGE, OPTIMIZE, a checkpoint
        and RESTORE; returns the versions written (each checked against the oracles)."""
        log = DeltaLog.for_path(self.path)
        commits = [p.name for p in (Path(self.path) / "_delta_log").iterdir()]
        first = min(int(n[:20]) for n in commits if COMMIT.fullmatch(n))
        latest = log.latest_version()
        assert latest is not None
        for version in range(first, latest + 1):
            self.check(version)
        k = self.key
        written = [self.run(f"INSERT INTO {{t}} SELECT * FROM {{t}} ORDER BY {k} LIMIT 1")]
        keys = self.keys()
        low, high = keys[0], keys[-1]
        written.append(self.run(f"UPDATE {{t}} SET {k} = {k} + 1000 WHERE {k} = {low}"))
        written.append(self.run(f"DELETE FROM {{t}} WHERE {k} = {high}"))
        mid = self.keys()[len(keys) // 2]
        written.append(
            self.run(
                f"MERGE INTO {{t}} AS t USING "
                f"(SELECT DISTINCT {k} FROM {{t}} WHERE {k} = {mid}) AS s "
                f"ON t.{k} = s.{k} WHEN MATCHED THEN UPDATE SET t.{k} = s.{k} + 2000"
            )
        )
        written.append(self.run("OPTIMIZE {t}"))
        self.run("ALTER TABLE {t} SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
        checkpointed = self.run(f"INSERT INTO {{t}} SELECT * FROM {{t}} ORDER BY {k} LIMIT 1")
        self.check_checkpoint(checkpointed)
        written.append(checkpointed)
        restored = self.run(f"RESTORE TABLE {{t}} TO VERSION AS OF {first}")
        assert self.check(restored) == self.check(first)
        written.append(restored)
        return written


def _copy(fixtures_dir: Path, tmp_path: Path, name: str) -> str:
    dest = tmp_path / name
    shutil.copytree(fixtures_dir / MODERN / name, dest)
    return str(dest)


# ---------------------------------------------------------------------------------------
# Item: a protocol that lists variantType while no column is VARIANT.


def test_deltalake_dv_table_with_unused_variant_feature(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "rs")
    data = pa.table({"id": pa.array(range(1, 9), pa.int64()), "v": [f"r{i}" for i in range(8)]})
    write_deltalake(path, data, configuration={"delta.enableDeletionVectors": "true"})
    protocol = DeltaTable(path).protocol()
    assert "variantType" in (protocol.reader_features or [])  # what deltalake 1.6.6 does
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    workout = Workout(s, path)
    written = workout.everything()
    log = DeltaLog.for_path(path)
    for version in written:  # the feature stays listed: txsql never drops a feature
        assert "variantType" in (log.snapshot(version).protocol.reader_features or ())
    assert any(f.deletion_vector for f in log.snapshot(written[3]).files)


# ---------------------------------------------------------------------------------------
# Fixtures txsql still refuses, each by the feature's name: reads (when refused) and every
# statement family, with the log left exactly as it was.

REFUSED = [
    # (fixture, text the error names, whether txsql reads it)
    ("catalog-owned-preview", "a catalog owns this table's commits", False),
    ("table-with-geo", "geospatial", False),
]

STATEMENTS = [
    "INSERT INTO {t} SELECT * FROM {t} LIMIT 1",
    "UPDATE {t} SET {k} = {k} WHERE {k} IS NOT NULL",
    "DELETE FROM {t} WHERE {k} IS NOT NULL",
    "MERGE INTO {t} AS a USING (SELECT * FROM {t}) AS b ON a.{k} = b.{k} WHEN MATCHED THEN DELETE",
    "OPTIMIZE {t}",
    "RESTORE TABLE {t} TO VERSION AS OF 0",
]


def _log_state(path: str) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (Path(path) / "_delta_log").rglob("*")}


@pytest.mark.parametrize(("name", "named", "reads"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_fixture_named(
    spark: Any, fixtures_dir: Path, tmp_path: Path, name: str, named: str, reads: bool
) -> None:
    path = _copy(fixtures_dir, tmp_path, name)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    before = _log_state(path)
    if not reads:
        with pytest.raises(UnsupportedFeatureError, match=re.escape(named)):
            s.table(path).to_spark().collect()
    key = s.table(path).to_spark().columns[0] if reads else "id"
    empty = reads and not DeltaLog.for_path(path).snapshot().files
    for sql in STATEMENTS:
        if empty and sql.startswith("OPTIMIZE"):
            continue  # nothing to compact: no commit is attempted
        text = sql.replace("{t}", f"delta.`{path}`").replace("{k}", f"`{key}`")
        with pytest.raises(UnsupportedFeatureError, match=re.escape(named)) as info:
            s.sql(text)
        assert info.value.hint, sql
    assert _log_state(path) == before


# ---------------------------------------------------------------------------------------
# Fixtures txsql writes: every statement family, every reader equal after each step.

WRITABLE = [
    # (fixture, DuckDB reads it, deltalake reads it)
    ("with-short-dv", True, True),
    ("cdf-table-with-cdc-and-dvs", True, True),
    ("compacted-log-files-table", True, True),
    ("basic-with-vacuum-protocol-check-feature", True, False),  # deltalake refuses it
    ("type-widening", True, False),  # deltalake refuses typeWidening-preview
    ("void-column", False, True),  # DuckDB refuses a VOID column
    ("unshredded-variant", True, False),  # deltalake hands VARIANTs over as raw binaries
    ("partitioned_with_materialize_feature", True, True),
    ("v2-checkpoints-json-with-sidecars", True, True),
    ("v2-checkpoints-parquet-with-sidecars", True, True),
    ("v2-parquet-sidecars-struct-stats-only", True, True),
    ("v2-classic-parquet-struct-stats-only", True, True),
    ("table-with-icebegCompatV2Enabled", True, True),
]


@pytest.mark.parametrize(("name", "duckdb", "deltalake"), WRITABLE, ids=[w[0] for w in WRITABLE])
def test_writable_fixture_workout(
    spark: Any, fixtures_dir: Path, tmp_path: Path, name: str, duckdb: bool, deltalake: bool
) -> None:
    path = _copy(fixtures_dir, tmp_path, name)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    log = DeltaLog.for_path(path)
    schema = log.snapshot().metadata.schema_string
    written = Workout(s, path, duckdb=duckdb, deltalake=deltalake).everything()
    for version in written[:-1]:  # every write keeps the schema, field metadata included
        assert log.snapshot(version).metadata.schema_string == schema


def test_type_widened_table_written_at_the_wide_types(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _copy(fixtures_dir, tmp_path, "type-widening")
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    log = DeltaLog.for_path(path)
    before = {f.path for f in log.snapshot().files}
    s.sql(f"UPDATE delta.`{path}` SET int_long = int_long + 5000000000 WHERE byte_long = 1")
    new = [f for f in log.snapshot().files if f.path not in before]
    assert new
    parquet = pq.read_schema(Path(path) / new[0].path)
    assert parquet.field("byte_long").type == pa.int64()
    assert parquet.field("float_double").type == pa.float64()
    assert parquet.field("date_timestamp_ntz").type == pa.timestamp("us")
    version = log.latest_version()
    assert version is not None
    got = duckdb_rows(path, version, "int_long")
    assert (5000000002,) in got  # a long value: the column was written as long


def test_void_column_stays_null_and_values_for_it_are_refused(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _copy(fixtures_dir, tmp_path, "void-column")
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    table = f"delta.`{path}`"
    s.sql(f"INSERT INTO {table} (id) VALUES (10)")
    s.sql(f"INSERT INTO {table} VALUES (11, NULL)")
    log = DeltaLog.for_path(path)
    before = _log_state(path)
    for sql in (f"INSERT INTO {table} VALUES (12, 5)", f"UPDATE {table} SET void_col = 'x'"):
        with pytest.raises(TxSqlError, match="VOID"):
            s.sql(sql)
    assert _log_state(path) == before
    version = log.latest_version()
    assert version is not None
    expected = [(1, None), (2, None), (3, None), (10, None), (11, None)]
    assert sorted(deltalake_rows(path, version, "id, void_col")) == expected
    for f in log.snapshot().files:  # as Delta Spark writes it: no Parquet column at all
        assert pq.read_schema(Path(path) / f.path).names == ["id"]
    with pytest.raises(SchemaError, match="VOID"):
        s.sql("CREATE TABLE fresh AS SELECT 1 AS id, NULL AS nothing")


def test_collations_fixture_takes_writes_under_its_collations(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    """The (empty) Delta Spark table with UTF8_LCASE and UNICODE columns: rows go in, come
    back through DuckDB and deltalake unchanged, and txsql's WHERE, UPDATE, DELETE and
    MERGE match under each column's collation, even where binary file stats would skip."""
    path = _copy(fixtures_dir, tmp_path, "collations-table")
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    table = f"delta.`{path}`"
    workout = Workout(s, path)
    workout.run("INSERT INTO {t} VALUES (1, 'ABC', 'ABC', 'b'), (2, 'abc', 'Abd', 'a')")
    workout.run("INSERT INTO {t} VALUES (3, 'xyz', 'XYZ', 'c')")  # its own file: bounds XYZ
    found = s.sql(f"SELECT id FROM {table} WHERE utf8_lcase_col = 'xyz'").collect()
    assert [r.id for r in found] == [3]  # binary bounds [XYZ, XYZ] exclude 'xyz'
    workout.run("UPDATE {t} SET id = id + 10 WHERE utf8_lcase_col = 'abc'")
    workout.run("DELETE FROM {t} WHERE utf8_lcase_col = 'abd'")
    workout.run(
        "MERGE INTO {t} t USING (SELECT 'xyz' AS k) s ON t.utf8_lcase_col = s.k COLLATE UTF8_LCASE "
        "WHEN MATCHED THEN UPDATE SET unicode_col = 'matched'"
    )
    log = DeltaLog.for_path(path)
    version = log.latest_version()
    assert version is not None
    rows = duckdb_rows(path, version, "id, utf8_binary_col, utf8_lcase_col, unicode_col")
    assert sorted(rows) == [(3, "xyz", "XYZ", "matched"), (11, "ABC", "ABC", "b")]
    snapshot = log.snapshot()
    assert "collations" in (snapshot.protocol.writer_features or ())
    assert "__COLLATIONS" in snapshot.metadata.schema_string  # kept on every commit
    ordered = s.sql(f"SELECT unicode_col FROM {table} ORDER BY unicode_col").collect()
    assert [r[0] for r in ordered] == ["b", "matched"]


def test_create_table_with_a_collated_column(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE names (id INT, name STRING COLLATE UTF8_LCASE)")
    s.sql("INSERT INTO names VALUES (1, 'Ada'), (2, 'ADA'), (3, 'bob')")
    path = s.table("names").location
    protocol = DeltaLog.for_path(path).snapshot().protocol
    assert {"collations", "domainMetadata"} <= set(protocol.writer_features or ())
    found = s.sql("SELECT id FROM names WHERE name = 'ada' ORDER BY id").collect()
    assert [r.id for r in found] == [1, 2]
    assert sorted(duckdb_rows(path, 1, "id, name")) == [(1, "Ada"), (2, "ADA"), (3, "bob")]
    assert sorted(deltalake_rows(path, 1, "id, name")) == [(1, "Ada"), (2, "ADA"), (3, "bob")]


def test_databricks_row_tracking_clustered_table(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    """The Databricks table with rowTracking, clustering and deletion vectors: INSERT,
    DELETE and insert-only MERGE commit with fresh row ids under the high-water mark;
    UPDATE and OPTIMIZE keep each row's stable id in the table's materialized columns."""
    path = _copy(fixtures_dir, tmp_path, "rowtracking-clustering-empty")
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    workout = Workout(s, path)
    workout.run("INSERT INTO {t} SELECT id FROM range(10)")
    workout.run("DELETE FROM {t} WHERE id = 3")
    workout.run(
        "MERGE INTO {t} t USING (SELECT 42 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
    )
    log = DeltaLog.for_path(path)
    snapshot = log.snapshot()
    bases = sorted((f.base_row_id, f.stats) for f in snapshot.files)
    assert all(base is not None for base, _ in bases)
    mark = json.loads(snapshot.domains["delta.rowTracking"].configuration)["rowIdHighWaterMark"]
    assert mark >= 10  # 11 rows inserted: ids 0..10 at least
    assert all(f.clustering_provider is None for f in snapshot.files)
    before = _row_ids(spark, log)
    workout.run("UPDATE {t} SET id = id + 100 WHERE id = 1")
    workout.run("OPTIMIZE {t}")
    after = _row_ids(spark, log)
    assert after.pop(101) == before.pop(1)  # the updated row kept its id
    assert after == before  # and compaction kept every id
    assert all(f.clustering_provider is None for f in log.snapshot().files)


def _row_ids(spark: Any, log: DeltaLog) -> dict[int, int]:
    """id -> stable row id of every live row (unique)."""
    snapshot = log.snapshot()
    row_id = snapshot.configuration["delta.rowTracking.materializedRowIdColumnName"]
    df = scan_snapshot(spark, snapshot, with_row_ids=True, with_lineage=True)
    found = {r[0]: r[1] for r in df.select("id", f"`{row_id}`").collect()}
    assert len(set(found.values())) == len(found)
    return found


def test_clustered_table_keeps_its_domain_and_liquid_files(spark: Any, tmp_path: Path) -> None:
    """A clustered table (made here as Delta Spark lays one out: the clustering feature,
    the delta.clustering domain, files marked clusteringProvider 'liquid'): writes keep
    the domain, OPTIMIZE clusters only the files no clustering laid out (its new files
    marked 'liquid' too), ZORDER BY is refused by name, and readers agree after each step."""
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE c (id BIGINT, v STRING)")
    for i in range(4):
        s.sql(f"INSERT INTO c VALUES ({i}, 'v{i}'), ({i + 10}, 'w{i}')")
    path = s.table("c").location
    log = DeltaLog.for_path(path)
    snapshot = log.snapshot()
    liquid = sorted(snapshot.files, key=lambda f: f.path)[:2]
    domain = DomainMetadata("delta.clustering", '{"clusteringColumns":[["id"]]}')
    protocol = Protocol(
        3, 7, ("deletionVectors",), ("clustering", "deletionVectors", "domainMetadata")
    )
    # An add of a path already in the table replaces its entry (the newest add wins).
    relaid = [
        dataclasses.replace(f, data_change=False, clustering_provider="liquid") for f in liquid
    ]
    actions: list[Action] = [CommitInfo(timestamp=1, operation="CLUSTER BY"), protocol, domain]
    actions += relaid
    log.store.write_if_absent(snapshot.version + 1, encode_commit(actions))
    workout = Workout(s, path)
    workout.run("UPDATE {t} SET v = 'changed' WHERE id = 11")
    workout.run("OPTIMIZE {t}")
    after = log.snapshot()
    assert after.domains["delta.clustering"] == domain
    # Every liquid file is still there, marked (the UPDATE may have given one a deletion
    # vector: its new entry keeps the provider); OPTIMIZE rewrote none of them, and
    # clustered the rest into new liquid files.
    assert {f.path for f in relaid} <= {f.path for f in after.files}
    assert all(f.clustering_provider == "liquid" for f in after.files)
    before_optimize = {f.path for f in log.snapshot(after.version - 1).files}
    assert len({f.path for f in after.files} - before_optimize) >= 1
    with pytest.raises(SchemaError, match="clustered table"):
        s.sql("OPTIMIZE c ZORDER BY (v)")


def test_materialized_partition_columns_are_in_every_new_file(
    spark: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _copy(fixtures_dir, tmp_path, "partitioned_with_materialize_feature")
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    log = DeltaLog.for_path(path)
    before = {f.path for f in log.snapshot().files}
    workout = Workout(s, path)
    workout.run("INSERT INTO {t} VALUES ('q', 100, 1.5), ('r', 101, 2.5)")
    workout.run("UPDATE {t} SET number = number + 1 WHERE letter = 'q'")
    workout.run("OPTIMIZE {t}")
    new = [f for f in log.snapshot().files if f.path not in before]
    assert new
    for f in new:
        table = pq.read_table(Path(path) / f.path)
        assert table.column_names[-1] == "letter" or "letter" in table.column_names
        assert set(table.column("letter").to_pylist()) == {f.partition_values["letter"]}
        stats = json.loads(f.stats or "{}")
        assert "letter" not in stats.get("minValues", {})  # no stats for partition columns
