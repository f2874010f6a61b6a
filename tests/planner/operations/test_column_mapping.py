"""Column mapping writes: enabling 'name' mode, RENAME/DROP COLUMN, and every write under it.

Oracles: DuckDB's delta_scan and deltalake read the tables txsql writes; the Parquet files
themselves are opened with pyarrow to see that they hold physical names only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import txsql
from tests.fixture_paths import FIXTURES
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import InvalidTablePropertyError, UnsupportedFeatureError
from txsql.log.deltalog import DeltaLog

pytestmark = [pytest.mark.spark]

PHYSICAL = "delta.columnMapping.physicalName"
ID = "delta.columnMapping.id"


def rows(s: txsql.Session, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(query).df.collect())


def oracles(root: str, version: int, columns: str) -> list[list[tuple[Any, ...]]]:
    return [duckdb_rows(root, version, columns), deltalake_rows(root, version, columns)]


def check_partitioned(root: str, version: int, data: str, part: str, want: list[Any]) -> None:
    """deltalake reads every column. DuckDB's delta extension returns NULL for partition
    columns of column-mapped tables (known bug duckdb/duckdb-delta#343 and #50, seen with
    Delta Spark's tables too; here only when the partition column is not the first one),
    so DuckDB checks the data columns only."""
    assert deltalake_rows(root, version, f"{data}, {part}") == want
    assert duckdb_rows(root, version, data) == sorted(row[:-1] for row in want)


def fields(log: DeltaLog) -> dict[str, dict[str, Any]]:
    schema = json.loads(log.snapshot().metadata.schema_string)
    return {f["name"]: f["metadata"] for f in schema["fields"]}


def data_file_columns(root: str, log: DeltaLog) -> set[str]:
    """Every column name found in the live data files' Parquet schemas."""
    names: set[str] = set()
    for add in log.snapshot().files:
        names.update(pq.read_schema(str(Path(root) / add.path.replace("%20", " "))).names)
    return names


def _latest(log: DeltaLog) -> int:
    """The newest version of a table the test has created."""
    version = log.latest_version()
    assert version is not None
    return version


def test_enable_rename_drop_then_every_write(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id INT, name STRING, p INT) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2)")
    root = str(tmp_path / "t")
    log = DeltaLog.for_path(root)

    r = s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    assert "protocol upgraded" in r.message and "columnMapping" in r.message
    snap = log.snapshot()
    assert snap.protocol.min_reader_version == 3 and snap.protocol.min_writer_version == 7
    assert "columnMapping" in (snap.protocol.reader_features or ())
    assert "columnMapping" in (snap.protocol.writer_features or ())
    # Existing columns keep their names as physical names: old files stay readable.
    assert {n: (m[ID], m[PHYSICAL]) for n, m in fields(log).items()} == {
        "id": (1, "id"),
        "name": (2, "name"),
        "p": (3, "p"),
    }
    assert snap.configuration["delta.columnMapping.maxColumnId"] == "3"

    s.sql("ALTER TABLE t RENAME COLUMN name TO label")
    s.sql("ALTER TABLE t RENAME COLUMN p TO part")  # a partition column too
    s.sql("ALTER TABLE t DROP COLUMN id")
    s.sql("ALTER TABLE t ADD COLUMNS (id BIGINT)")  # a new column: the old ids stay dropped
    assert log.snapshot().partition_columns == ("part",)
    new_id = fields(log)["id"]
    assert new_id[ID] == 4 and new_id[PHYSICAL].startswith("col-")
    expected: list[tuple[str, int | None, int]] = [("a", None, 1), ("b", None, 1), ("c", None, 2)]
    assert rows(s, "SELECT label, id, part FROM t") == expected
    check_partitioned(root, _latest(log), "label, id", "part", expected)

    s.sql("INSERT INTO t (label, part, id) VALUES ('d', 2, 40), ('e', 3, 50)")
    s.sql("UPDATE t SET id = 20 WHERE label = 'b'")
    s.sql("DELETE FROM t WHERE label = 'a'")
    s.sql(
        "MERGE INTO t USING (SELECT 'c' AS l, 33 AS v UNION ALL SELECT 'f', 60) src "
        "ON t.label = src.l WHEN MATCHED THEN UPDATE SET id = src.v "
        "WHEN NOT MATCHED THEN INSERT (label, part, id) VALUES (src.l, 3, src.v)"
    )
    s.sql("INSERT INTO t REPLACE WHERE part = 3 SELECT 'g', 3, 70")
    s.sql("OPTIMIZE t")
    expected = [("b", 20, 1), ("c", 33, 2), ("d", 40, 2), ("g", 70, 3)]
    assert rows(s, "SELECT label, id, part FROM t") == expected
    check_partitioned(root, _latest(log), "label, id", "part", expected)
    # New files hold physical names only; stats and partition values are keyed by them.
    written = [a for a in log.snapshot().files if a.stats and new_id[PHYSICAL] in a.stats]
    assert written, "the files written after ADD COLUMNS carry stats for the new column"
    for add in log.snapshot().files:
        assert set(add.partition_values) == {"p"}
        assert "label" not in json.loads(add.stats or "{}").get("nullCount", {})
    assert data_file_columns(root, log) <= {"id", "name", new_id[PHYSICAL]}


def test_create_with_name_mode_uses_fresh_physical_names(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE m TBLPROPERTIES ('delta.columnMapping.mode' = 'name') "
        "AS SELECT 1 AS k, 'x' AS `v v`, named_struct('x', 1, 'y', 'q') AS st"
    )
    root = str(tmp_path / "m")
    log = DeltaLog.for_path(root)
    meta = fields(log)
    # Nested struct fields get ids and physical names too (ids 4 and 5 after "st").
    assert [meta["k"][ID], meta["v v"][ID], meta["st"][ID]] == [1, 2, 3]
    assert all(m[PHYSICAL].startswith("col-") for m in meta.values())
    assert log.snapshot().configuration["delta.columnMapping.maxColumnId"] == "5"
    assert data_file_columns(root, log) == {m[PHYSICAL] for m in meta.values()}
    # Like Delta Spark, each column's id is its Parquet field id.
    first = pq.read_schema(str(Path(root) / log.snapshot().files[0].path))
    assert {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in first} == {
        m[PHYSICAL]: m[ID] for n, m in meta.items()
    }
    s.sql("INSERT OVERWRITE m SELECT 2, 'y', named_struct('x', 2, 'y', 'r')")
    s.sql("ALTER TABLE m RENAME COLUMN `v v` TO w")
    s.sql("INSERT INTO m VALUES (3, 'z', named_struct('x', 3, 'y', 's'))")
    expected = [(2, "y", 2, "r"), (3, "z", 3, "s")]
    assert rows(s, "SELECT k, w, st.x, st.y FROM m") == expected
    for seen in oracles(root, _latest(log), "k, w, st.x, st.y"):
        assert seen == expected


def test_rename_and_drop_need_column_mapping(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE plain (a INT, b INT)")
    s.sql("CREATE TABLE legacy (a INT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    for statement in (
        "ALTER TABLE plain RENAME COLUMN a TO c",
        "ALTER TABLE plain DROP COLUMN b",
        "ALTER TABLE plain DROP COLUMNS (a, b)",
    ):
        with pytest.raises(UnsupportedFeatureError, match="column mapping") as info:
            s.sql(statement)
        assert "delta.columnMapping.mode" in (info.value.hint or "")
    assert DeltaLog.for_path(str(tmp_path / "plain")).latest_version() == 0
    # Delta's documented idiom on a legacy table: reader 2 / writer 5 imply columnMapping.
    r = s.sql(
        "ALTER TABLE legacy SET TBLPROPERTIES ('delta.minReaderVersion' = '2', "
        "'delta.minWriterVersion' = '5', 'delta.columnMapping.mode' = 'name')"
    )
    assert "reader 2 / writer 5" in r.message
    protocol = DeltaLog.for_path(str(tmp_path / "legacy")).snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (2, 5)
    s.sql("ALTER TABLE legacy RENAME COLUMN a TO b")
    s.sql("INSERT INTO legacy VALUES (7)")
    for seen in oracles(str(tmp_path / "legacy"), 3, "b"):
        assert seen == [(7,)]


def test_mapping_mode_changes_and_bad_columns_refused(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE n (a INT, b INT, p INT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    with pytest.raises(InvalidTablePropertyError, match="from 'name' to 'none'"):
        s.sql("ALTER TABLE n SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    with pytest.raises(InvalidTablePropertyError, match="column mapping"):
        s.sql("ALTER TABLE n UNSET TBLPROPERTIES ('delta.columnMapping.mode')")
    with pytest.raises(txsql.errors.SchemaError, match="already has a column"):
        s.sql("ALTER TABLE n RENAME COLUMN a TO B")
    with pytest.raises(txsql.errors.SchemaError, match="not found"):
        s.sql("ALTER TABLE n DROP COLUMN zz")
    with pytest.raises(txsql.errors.SchemaError, match="partition column"):
        s.sql("ALTER TABLE n DROP COLUMN p")
    with pytest.raises(txsql.errors.SchemaError, match="every data column"):
        s.sql("ALTER TABLE n DROP COLUMNS (a, b)")
    assert DeltaLog.for_path(str(tmp_path / "n")).latest_version() == 0
    s.sql("ALTER TABLE n DROP COLUMN IF EXISTS zz")
    assert DeltaLog.for_path(str(tmp_path / "n")).latest_version() == 0
    # Fresh col-<uuid> partition names: both readers see every column.
    s.sql("INSERT INTO n VALUES (1, 2, 3), (4, 5, NULL)")
    s.sql("ALTER TABLE n RENAME COLUMN p TO q")
    assert deltalake_rows(str(tmp_path / "n"), 2, "a, b, q") == [(1, 2, 3), (4, 5, None)]
    assert duckdb_rows(str(tmp_path / "n"), 2, "a, b") == [(1, 2), (4, 5)]
    # A CHECK constraint names columns logically: renaming or dropping them is refused.
    s.sql("ALTER TABLE n ADD CONSTRAINT pos CHECK (a > 0)")
    before = DeltaLog.for_path(str(tmp_path / "n")).latest_version()
    for statement in ("ALTER TABLE n RENAME COLUMN a TO z", "ALTER TABLE n DROP COLUMN a"):
        with pytest.raises(txsql.errors.SchemaError, match="CHECK constraint pos"):
            s.sql(statement)
    assert DeltaLog.for_path(str(tmp_path / "n")).latest_version() == before


def test_spark_written_mapped_fixture_accepts_txsql_writes(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "cm")
    shutil.copytree(FIXTURES / "delta-golden" / "dv-with-columnmapping", root)
    start = _latest(DeltaLog.for_path(root))
    before = deltalake_rows(root, start, "part, col1, col2")
    s = txsql.Session(spark, warehouse=str(tmp_path))
    table = f"delta.`{root}`"
    s.sql(f"INSERT INTO {table} VALUES (100, 1000, 'new')")
    s.sql(f"UPDATE {table} SET col2 = 'upd' WHERE part = 3")
    s.sql(f"DELETE FROM {table} WHERE col1 % 2 = 0")
    s.sql(f"ALTER TABLE {table} RENAME COLUMN col2 TO label")
    expected = sorted(
        (part, col1, "upd" if part == 3 else col2)
        for part, col1, col2 in [*before, (100, 1000, "new")]
        if col1 % 2 != 0
    )
    version = _latest(DeltaLog.for_path(root))
    assert rows(s, f"SELECT part, col1, label FROM {table}") == expected
    for seen in oracles(root, version, "part, col1, label"):
        assert seen == expected


@pytest.mark.parametrize("change", ["RENAME COLUMN v TO w", "DROP COLUMN v"])
def test_schema_change_racing_an_insert(spark: Any, tmp_path: Path, change: str) -> None:
    """An INSERT staged before a concurrent RENAME/DROP either conflicts or lands as if it
    ran first; it never loses a row or resurrects a dropped column's values."""
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE r (k INT, v STRING) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    s.sql("INSERT INTO r VALUES (1, 'a')")
    tx = s.begin()
    tx.sql("INSERT INTO r VALUES (2, 'b')")
    s.sql(f"ALTER TABLE r {change}")
    committed = True
    try:
        tx.commit()
    except txsql.errors.CommitConflictError:
        committed = False
    # Serial orders: INSERT then change (rows 1 and 2), or the change alone (row 1) with
    # the INSERT refused. The INSERT cannot run after the change: it names column v.
    keys = [1, 2] if committed else [1]
    if change.startswith("RENAME"):
        want: list[tuple[Any, ...]] = [(k, "ab"[k - 1]) for k in keys]
        assert rows(s, "SELECT k, w FROM r") == want
        columns = "k, w"
    else:
        want = [(k,) for k in keys]
        assert rows(s, "SELECT * FROM r") == want
        columns = "k"
    version = _latest(DeltaLog.for_path(str(tmp_path / "r")))
    for seen in oracles(str(tmp_path / "r"), version, columns):
        assert seen == want


def test_stats_columns_follow_renames_and_drops() -> None:
    from txsql.planner.operations.columns import _rename_in_stats_columns

    key = "delta.dataSkippingStatsColumns"
    conf = {key: "a, B.x,c"}
    assert _rename_in_stats_columns(dict(conf), "b", "z")[key] == "a,z.x,c"
    assert _rename_in_stats_columns(dict(conf), "a", "new name")[key] == "`new name`,B.x,c"
    assert _rename_in_stats_columns(dict(conf), "c", None)[key] == "a,B.x"
    assert key not in _rename_in_stats_columns({key: "c"}, "c", None)
