"""Scans of tables txsql writes: partitions, NULLs, schema evolution, DVs, row ids."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from pyroaring import BitMap64

from txsql.dv.store import write_deletion_vectors
from txsql.engine import dv_filter, file_constants, scan_cache, scan_files
from txsql.engine import scan as scan_module
from txsql.engine.scan import resolve_path, scan_snapshot
from txsql.engine.write import write_data_files
from txsql.errors import CorruptDeletionVectorError, TxSqlError
from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.logstore import LogStore

pytestmark = pytest.mark.spark

DV_PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def field(name: str, type_: str) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": {}}


def make_metadata(fields: list[dict[str, Any]], partitions: tuple[str, ...] = ()) -> Metadata:
    schema = json.dumps({"type": "struct", "fields": fields})
    return Metadata(
        id="t",
        schema_string=schema,
        partition_columns=partitions,
        configuration={"delta.enableDeletionVectors": "true"},
    )


def commit(root: Path, version: int, actions: list[Any]) -> None:
    data = encode_commit([CommitInfo(timestamp=1, operation="TEST"), *actions])
    LogStore(str(root), LocalFileIO()).write_if_absent(version, data)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def with_dv(root: Path, add: AddFile, deleted: list[int]) -> list[Any]:
    (descriptor,) = write_deletion_vectors(str(root), LocalFileIO(), [BitMap64(deleted)])
    stats = json.loads(add.stats or "{}") | {"tightBounds": False}
    new = dataclasses.replace(add, deletion_vector=descriptor, stats=json.dumps(stats))
    return [RemoveFile(add.path, 1, True, True, add.partition_values, add.size), new]


def test_with_row_ids_are_physical_positions(spark: Any, fixtures_dir: Path) -> None:
    snapshot = DeltaLog.for_path(str(fixtures_dir / "delta-golden/table-with-dv-small")).snapshot(1)
    df = scan_snapshot(spark, snapshot, with_row_ids=True)
    assert df.columns == ["value", "_file", "_row_index"]
    (add,) = snapshot.files
    # The file holds 0..9 in order; the DV deletes positions 0 and 9.
    assert rows(df) == sorted(((v, add.path, v) for v in range(1, 9)), key=repr)


def test_several_dvs_packed_in_one_file(spark: Any, fixtures_dir: Path) -> None:
    snapshot = DeltaLog.for_path(str(fixtures_dir / "delta-golden/table-with-dv-large")).snapshot(1)
    dvs = [f.deletion_vector for f in snapshot.files if f.deletion_vector is not None]
    by_file: dict[str, set[int | None]] = {}
    for dv in dvs:
        by_file.setdefault(dv.path_or_inline_dv, set()).add(dv.offset)
    assert max(len(offsets) for offsets in by_file.values()) > 1
    df = scan_snapshot(spark, snapshot, with_row_ids=True)
    assert sorted(r.value for r in df.collect()) == sorted(
        set(range(2000)) - {0, 180, 300, 700, 1800}
    )


def test_partitions_nulls_and_schema_evolution(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    meta0 = make_metadata(
        [field("p", "string"), field("id", "long"), field("d", "date")], ("p", "d")
    )
    df = spark.sql(
        "select case when id = 2 then null else concat('a b:[', id % 2, ']') end p, id, "
        "date_add(date'2024-02-28', cast(id % 2 as int)) d from range(4)"
    )
    adds = write_data_files(spark, df, str(root), meta0)
    commit(root, 0, [Protocol(1, 2), meta0, *adds])
    # v1 adds a column: files written before it read as NULL.
    meta1 = dataclasses.replace(
        meta0,
        schema_string=json.dumps(
            {
                "type": "struct",
                "fields": [
                    field("p", "string"),
                    field("id", "long"),
                    field("d", "date"),
                    field("extra", "double"),
                ],
            }
        ),
    )
    more = spark.sql("select 'z' p, 10L id, date'2024-01-01' d, 1.5D extra")
    adds1 = write_data_files(spark, more, str(root), meta1)
    commit(root, 1, [meta1, *adds1])
    snap = DeltaLog.for_path(str(root)).snapshot()
    out = scan_snapshot(spark, snap)
    assert out.columns == ["p", "id", "d", "extra"]
    assert [f.dataType.simpleString() for f in out.schema.fields] == [
        "string",
        "bigint",
        "date",
        "double",
    ]
    import datetime as dt

    d0, d1 = dt.date(2024, 2, 28), dt.date(2024, 2, 29)
    expected = [
        ("a b:[0]", 0, d0, None),
        ("a b:[1]", 1, d1, None),
        (None, 2, d0, None),
        ("a b:[1]", 3, d1, None),
        ("z", 10, dt.date(2024, 1, 1), 1.5),
    ]
    assert rows(out) == sorted(expected, key=repr)
    null_add = next(a for a in adds if a.partition_values["p"] is None)
    assert null_add.partition_values == {"p": None, "d": "2024-02-28"}
    # Time travel to v0 keeps v0's schema.
    assert scan_snapshot(spark, DeltaLog.for_path(str(root)).snapshot(0)).columns == [
        "p",
        "id",
        "d",
    ]


def test_dv_and_plain_files_unioned(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    meta = make_metadata([field("id", "long"), field("g", "integer")], ("g",))
    adds = write_data_files(
        spark, spark.sql("select id, cast(id % 2 as int) g from range(20)"), str(root), meta
    )
    commit(root, 0, [DV_PROTOCOL, meta, *adds])
    target = next(a for a in adds if a.partition_values["g"] == "0")
    physical = sorted(
        (
            (r.id, r._row_index)
            for r in scan_snapshot(
                spark, DeltaLog.for_path(str(root)).snapshot(), with_row_ids=True
            )
            .where(f"_file = '{target.path}'")
            .collect()
        ),
        key=lambda t: t[1],
    )
    deleted_positions = [0, 3, len(physical) - 1]
    commit(root, 1, with_dv(root, target, deleted_positions))
    snap = DeltaLog.for_path(str(root)).snapshot()
    gone = {physical[i][0] for i in deleted_positions}
    assert rows(scan_snapshot(spark, snap)) == sorted(
        ((i, i % 2) for i in range(20) if i not in gone), key=repr
    )
    with_ids = scan_snapshot(spark, snap, with_row_ids=True).collect()
    assert {(r.id, r._row_index) for r in with_ids if r._file == target.path} == {
        p for i, p in enumerate(physical) if i not in deleted_positions
    }


@pytest.mark.parametrize("where", ["literal", "driver", "driver_checkpoint", "executors"])
def test_dv_expansion_on_driver_and_executors(
    spark: Any, fixtures_dir: Path, monkeypatch: Any, where: str
) -> None:
    # A fresh cache so each expansion path really runs; a limit of -1 forces the executors.
    monkeypatch.setattr(dv_filter, "_DV_CACHE", scan_cache.DeletedRowsCache())
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    if where != "literal":  # a literal IN set for few deleted rows, else a join
        monkeypatch.setattr(dv_filter, "_LITERAL_KEYS", -1)
    if where == "driver_checkpoint":  # the driver's keys checkpointed, not local rows
        monkeypatch.setattr(dv_filter, "_LOCAL_RELATION_ROWS", -1)
    if where == "executors":
        monkeypatch.setattr(dv_filter, "_DRIVER_EXPANSION_ROWS", -1)
    snapshot = DeltaLog.for_path(str(fixtures_dir / "delta-golden/table-with-dv-large")).snapshot(1)
    df = scan_snapshot(spark, snapshot)
    assert sorted(r.value for r in df.collect()) == sorted(
        set(range(2000)) - {0, 180, 300, 700, 1800}
    )


@pytest.mark.parametrize("where", ["literal", "driver", "driver_checkpoint", "executors"])
def test_damaged_dv_is_a_typed_error(
    spark: Any, tmp_path: Path, monkeypatch: Any, where: str
) -> None:
    monkeypatch.setattr(dv_filter, "_DV_CACHE", scan_cache.DeletedRowsCache())
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    if where != "literal":  # a literal IN set for few deleted rows, else a join
        monkeypatch.setattr(dv_filter, "_LITERAL_KEYS", -1)
    if where == "driver_checkpoint":  # the driver's keys checkpointed, not local rows
        monkeypatch.setattr(dv_filter, "_LOCAL_RELATION_ROWS", -1)
    if where == "executors":
        monkeypatch.setattr(dv_filter, "_DRIVER_EXPANSION_ROWS", -1)
    root = tmp_path / "t"
    meta = make_metadata([field("id", "long")])
    (add,) = write_data_files(spark, spark.range(10).coalesce(1), str(root), meta)
    commit(root, 0, [DV_PROTOCOL, meta, add])
    commit(root, 1, with_dv(root, add, [1, 2]))
    snap = DeltaLog.for_path(str(root)).snapshot()
    (dv_file,) = root.rglob("*.bin")
    dv_file.write_bytes(dv_file.read_bytes()[:-3])  # truncated: checksum and size fail
    with pytest.raises(CorruptDeletionVectorError):
        scan_snapshot(spark, snap).collect()


def test_string_keys_when_crcs_collide(spark: Any, fixtures_dir: Path, monkeypatch: Any) -> None:
    class SameCrc:
        @staticmethod
        def crc32(data: bytes) -> int:
            return 7

    monkeypatch.setattr(scan_files, "zlib", SameCrc)
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    monkeypatch.setattr(dv_filter, "_DV_CACHE", scan_cache.DeletedRowsCache())
    snapshot = DeltaLog.for_path(
        str(fixtures_dir / "delta-golden/partitioned-table-with-dv-large")
    ).snapshot(1)
    df = scan_snapshot(spark, snapshot, with_row_ids=True)
    expected = set(range(2000)) - {0, 180, 308, 225, 756, 1007, 1503}
    assert sorted((r.id, r.partCol) for r in df.collect()) == sorted((i, i % 10) for i in expected)


def test_plan_reused_per_version_and_missing_file_still_typed(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    meta = make_metadata([field("id", "long")])
    adds = write_data_files(spark, spark.range(6).repartition(2), str(root), meta)
    commit(root, 0, [DV_PROTOCOL, meta, *adds])
    commit(root, 1, with_dv(root, adds[0], [0]))
    log = DeltaLog.for_path(str(root))
    first = scan_snapshot(spark, log.snapshot())
    # A fresh Snapshot object of the same version reuses the plan; another version does not.
    assert scan_snapshot(spark, DeltaLog.for_path(str(root)).snapshot()) is first
    assert scan_snapshot(spark, log.snapshot(0)) is not first
    assert sorted(r.id for r in scan_snapshot(spark, log.snapshot(0)).collect()) == list(range(6))
    assert len(first.collect()) == 5
    Path(resolve_path(str(root), adds[1].path)).unlink()
    with pytest.raises(TxSqlError, match="missing"):
        scan_snapshot(spark, DeltaLog.for_path(str(root)).snapshot())


def test_empty_table(spark: Any, tmp_path: Path) -> None:
    meta = make_metadata([field("id", "long"), field("p", "string")], ("p",))
    commit(tmp_path, 0, [Protocol(1, 2), meta])
    snap = DeltaLog.for_path(str(tmp_path)).snapshot()
    df = scan_snapshot(spark, snap, with_row_ids=True)
    assert df.columns == ["id", "p", "_file", "_row_index"]
    assert df.count() == 0


def test_resolve_path() -> None:
    assert resolve_path("/t", "a%20b/c.parquet") == "/t/a b/c.parquet"
    assert resolve_path("/t", "file:/x/y%25z.parquet") == "/x/y%z.parquet"


HOSTILE_PARTS = ["it's", "back\\slash", "ü€ x=y%", "[glob]{*}", None]


@pytest.mark.parametrize("constants", ["literal", "join"])
def test_constants_special_values_and_hostile_names(
    spark: Any, tmp_path: Path, monkeypatch: Any, constants: str
) -> None:
    """Partition values with quotes, backslashes, glob characters, NULL and dates, next to
    columns named like the scan's helpers, through map literals and through the join."""
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    if constants == "join":  # more files than the literal limit: the per-file table joined
        monkeypatch.setattr(file_constants, "_LITERAL_FILES", 1)
    root = tmp_path / "t"
    names = ["_file", "a`b", "_txsql_fk", "p", "d"]
    meta = make_metadata(
        [field(n, t) for n, t in zip(names, ["string", "long", "integer", "string", "date"])],
        ("p", "d"),
    )
    # (i % 5, i % 2) are distinct for i < 10: ten partitions of one row each.
    data = [(f"f{i}", i, -i, HOSTILE_PARTS[i % 5], dt.date(2024, 2, 28 + i % 2)) for i in range(10)]
    schema = "`_file` string, `a``b` long, `_txsql_fk` int, p string, d date"
    adds = write_data_files(spark, spark.createDataFrame(data, schema), str(root), meta)
    assert len(adds) == 10
    commit(root, 0, [DV_PROTOCOL, meta, *adds])
    # A DV deletes the only row of the (NULL, 2024-02-29) partition (i = 9).
    gone = next(a for a in adds if a.partition_values == {"p": None, "d": "2024-02-29"})
    commit(root, 1, with_dv(root, gone, [0]))
    snap = DeltaLog.for_path(str(root)).snapshot()
    out = scan_snapshot(spark, snap, with_row_ids=True)
    assert out.columns == [*names, "_file_1", "_row_index"]
    got = out.collect()
    assert sorted((tuple(r)[:5] for r in got), key=repr) == sorted(data[:9], key=repr)
    path_of = {(a.partition_values["p"], a.partition_values["d"]): a.path for a in adds}
    for r in got:
        # _file_1 is the log's path of the file holding the row, text for text.
        assert (r["_file_1"], r["_row_index"]) == (path_of[(r["p"], r["d"].isoformat())], 0)
    # A filter on a partition column goes through the lookup (or the join) too.
    its = scan_snapshot(spark, snap).where("p = 'it''s'").collect()
    assert sorted(r["a`b"] for r in its) == [0, 5]


def test_literal_keys_match_spark_row_keys(spark: Any) -> None:
    """The driver's keys, written as SQL literals, equal Spark's ``crc << 32 | row``, also
    when a high CRC wraps into the sign bit (down to the minimum long)."""
    checks = []
    for crc in (0, 2**31 - 1, 2**31, 2**32 - 1):
        for row in (0, 7, 2**31 + 5):
            key = int(np.left_shift(np.int64(crc), np.int64(32)) | np.int64(row))
            checks.append(f"(shiftleft({crc}L, 32) | {row}L) IN ({scan_files.sql_long(key)})")
    assert spark.sql(f"SELECT {' AND '.join(checks)} AS hit").first().hit is True


@pytest.mark.parametrize("dv_filter_kind", ["literal", "join"])
def test_pushdown_keeps_row_indexes_across_row_groups(
    spark: Any, tmp_path: Path, monkeypatch: Any, dv_filter_kind: str
) -> None:
    """A WHERE on a data column reaches the Parquet reader (row-group skipping) next to the
    row index, and the row indexes of later row groups stay physical positions."""
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    if dv_filter_kind == "join":
        monkeypatch.setattr(dv_filter, "_LITERAL_KEYS", -1)
    root = tmp_path / "t"
    meta = make_metadata([field("id", "long")])
    spark.conf.set("parquet.block.size", "2048")  # row groups of ~100 rows
    try:
        (add,) = write_data_files(spark, spark.range(3000).coalesce(1), str(root), meta)
    finally:
        spark.conf.unset("parquet.block.size")
    import pyarrow.parquet as pq

    assert pq.ParquetFile(resolve_path(str(root), add.path)).num_row_groups > 5
    commit(root, 0, [DV_PROTOCOL, meta, add])
    commit(root, 1, with_dv(root, add, [5, 2500]))
    snap = DeltaLog.for_path(str(root)).snapshot()
    df = scan_snapshot(spark, snap, with_row_ids=True).where("id IN (2500, 2501, 2999)")
    assert sorted((r.id, r._row_index) for r in df.collect()) == [(2501, 2501), (2999, 2999)]
    plan = df._jdf.queryExecution().executedPlan().toString()
    pushed = [line for line in plan.splitlines() if "PushedFilters" in line]
    assert pushed and all("In(id," in line for line in pushed)


def test_scan_of_many_files_runs_one_spark_job(
    spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """More files than Spark lists itself (32) and per-file constants: the query is still
    one job, counted by Spark's own status tracker (no listing job, no broadcast)."""
    monkeypatch.setattr(scan_module, "_SCAN_CACHE", scan_cache.ScanCache())
    root = tmp_path / "t"
    meta = make_metadata([field("id", "long"), field("g", "integer")], ("g",))
    source = spark.sql("select id, cast(id % 40 as int) g from range(80)").coalesce(1)
    adds = write_data_files(spark, source, str(root), meta)
    assert len(adds) == 40
    commit(root, 0, [Protocol(1, 2), meta, *adds])
    commit(root, 1, with_dv(root, adds[0], [0]))
    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(threshold)
    sc: Any = spark.sparkContext
    group = f"txsql-scan-jobs-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "scan")
    try:
        df = scan_snapshot(spark, DeltaLog.for_path(str(root)).snapshot(), with_row_ids=True)
        got = df.where("id IN (0, 40, 5)").collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert len(sc.statusTracker().getJobIdsForGroup(group)) == 1
    assert spark.conf.get(threshold) == before
    gone = {r.id for r in got} ^ {0, 40, 5}
    assert len(gone) == 1 and gone <= {0, 40}  # the DV deleted the first row of adds[0]
    by_path = {a.path: int(cast(str, a.partition_values["g"])) for a in adds}
    assert all(by_path[r._file] == r.g == r.id % 40 for r in got)
