"""MERGE INTO end to end: final contents equal DuckDB's MERGE on the same rows, and the
table reads identically through DuckDB's delta_scan and deltalake afterwards."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, QueryBuilder

import txsql
from tests.interop.readers import duckdb_connection
from txsql.planner.operations.merge.execute import SPLIT_ROWS_ENV
from txsql.planner.operations.merge.small_target import SMALL_TARGET_ROWS_ENV

pytestmark = pytest.mark.spark

Row = tuple[Any, ...]
TARGET_BATCHES: list[list[Row]] = [
    [(1, "a", 1), (2, "b", 1), (None, "n", 1)],
    [(3, "c", 2), (4, None, 2), (2, "b2", 2)],  # a second file; id 2 twice in the target
]
SOURCE: list[Row] = [
    (1, "A", 1),
    (2, "B", 2),
    (3, None, 2),
    (5, "E", 3),
    (None, "N", 1),
    (6, "F", None),
]
HEAD = "MERGE INTO t AS x USING src AS y ON x.id = y.id"
CASES = {
    "update_conditional": "WHEN MATCHED AND y.v IS NOT NULL THEN UPDATE SET v = y.v, p = y.p",
    "update_star": "WHEN MATCHED THEN UPDATE SET *",
    "delete": "WHEN MATCHED THEN DELETE",
    "delete_conditional": "WHEN MATCHED AND x.p = 1 THEN DELETE",
    "insert_star": "WHEN NOT MATCHED THEN INSERT *",
    "insert_columns": "WHEN NOT MATCHED BY TARGET AND y.id > 4 "
    "THEN INSERT (id, v) VALUES (y.id, y.v || '!')",
    "by_source_delete": "WHEN NOT MATCHED BY SOURCE THEN DELETE",
    "by_source_update": "WHEN NOT MATCHED BY SOURCE AND x.v <> 'b' "
    "THEN UPDATE SET v = x.v || '?', p = 9",
    "combined": "WHEN MATCHED AND y.v IS NULL THEN DELETE "
    "WHEN MATCHED AND x.p = 2 THEN UPDATE SET v = y.v || x.v "
    "WHEN MATCHED THEN UPDATE SET * "
    "WHEN NOT MATCHED AND y.p IS NULL THEN INSERT (id, v, p) VALUES (y.id, 'null-p', 0) "
    "WHEN NOT MATCHED THEN INSERT * "
    "WHEN NOT MATCHED BY SOURCE AND x.id IS NULL THEN DELETE "
    "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET p = x.p + 10",
}
# (case, partitioned, small): "small" lets a small target run as one query (the default),
# else the persisted join runs (NOT MATCHED BY SOURCE clauses always take it).
MATRIX = [(name, False, True) for name in CASES] + [
    ("update_conditional", True, True),
    ("delete_conditional", True, True),
    ("insert_columns", True, True),
    ("combined", True, True),
    ("update_star", False, False),
    ("delete", False, False),
    ("insert_columns", True, False),
]


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _create(s: txsql.Session, partitioned: bool, properties: str = "") -> None:
    by = " PARTITIONED BY (p)" if partitioned else ""
    s.sql(f"CREATE TABLE t (id INT, v STRING, p INT){by}{properties}")
    for batch in TARGET_BATCHES:
        s.sql("INSERT INTO t VALUES " + ", ".join(_values(r) for r in batch))


def _values(row: Row) -> str:
    return "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")"


def _source_view(spark: Any, rows: list[Row] = SOURCE) -> None:
    spark.createDataFrame(rows, "id INT, v STRING, p INT").createOrReplaceTempView("src")


def _txsql_rows(s: txsql.Session, table: str = "t") -> Counter[Row]:
    return Counter(tuple(r) for r in s.sql(f"SELECT id, v, p FROM {table}").df.collect())


def _duckdb_merge(target: Counter[Row], source: list[Row], sql: str) -> Counter[Row]:
    """The oracle: the same MERGE run by DuckDB on plain tables."""
    con = duckdb_connection()
    try:
        for name, rows in (("t", list(target.elements())), ("src", source)):
            con.execute(f"CREATE TABLE {name} (id INTEGER, v VARCHAR, p INTEGER)")
            if rows:
                con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", rows)
        con.execute(sql)
        return Counter(con.execute("SELECT id, v, p FROM t").fetchall())
    finally:
        con.close()


def _readers(path: str, version: int) -> tuple[Counter[Row], Counter[Row]]:
    """The table as DuckDB's delta_scan and deltalake's QueryBuilder read it."""
    con = duckdb_connection()
    try:
        scan = f"SELECT id, v, p FROM delta_scan('{path}', version => {version})"
        duck = Counter(con.execute(scan).fetchall())
    finally:
        con.close()
    table = DeltaTable(path, version=version)
    result = QueryBuilder().register("t", table).execute("SELECT id, v, p FROM t").read_all()
    columns = [result.column(i).to_pylist() for i in range(result.num_columns)]
    return duck, Counter(zip(*columns))


@pytest.mark.parametrize(("case", "partitioned", "small"), MATRIX)
def test_merge_matches_duckdb_and_readers(
    s: txsql.Session,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    partitioned: bool,
    small: bool,
) -> None:
    if not small:
        monkeypatch.setenv(SMALL_TARGET_ROWS_ENV, "0")
    _create(s, partitioned)
    _source_view(spark)
    before = _txsql_rows(s)
    sql = f"{HEAD} {CASES[case]}"
    result = s.sql(sql)
    assert result.operation == "MERGE" and result.version == 3
    expected = _duckdb_merge(before, SOURCE, sql)
    after = _txsql_rows(s)
    assert after == expected
    duck, deltalake = _readers(s.table("t").location, 3)
    assert duck == after and deltalake == after
    m = result.metrics
    parts = m["num_updated_rows"] + m["num_deleted_rows"] + m["num_inserted_rows"]
    assert m["num_affected_rows"] == parts > 0


def test_metrics_and_commit_info(s: txsql.Session, spark: Any) -> None:
    _create(s, partitioned=False)
    _source_view(spark)
    result = s.sql(f"{HEAD} {CASES['combined']}")
    # matched: 1 (update *), 2 x2 (one in p=2: update v, one in p=1: update *), 3 deleted;
    # inserted: 5 (insert *), NULL id (insert *), 6 (p IS NULL clause);
    # by source: NULL-id target row deleted, 4 updated.
    assert result.metrics == {
        "num_affected_rows": 9,
        "num_updated_rows": 4,
        "num_deleted_rows": 2,
        "num_inserted_rows": 3,
        "spark_jobs": 3,  # source, new rows, summary (DVs from its bitmaps)
    }
    history = s.table("t").snapshot(3).commit_info
    assert history is not None and history.operation == "MERGE"
    assert history.operation_parameters == {
        "predicate": '["x.id = y.id"]',
        "matchedPredicates": '[{"predicate":"y.v IS NULL","actionType":"delete"},'
        '{"predicate":"x.p = 2","actionType":"update"},{"actionType":"update"}]',
        "notMatchedPredicates": '[{"predicate":"y.p IS NULL","actionType":"insert"},'
        '{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": '[{"predicate":"x.id IS NULL","actionType":"delete"},'
        '{"actionType":"update"}]',
    }
    m = {k: int(v) for k, v in (history.operation_metrics or {}).items()}
    assert m["numSourceRows"] == 6
    assert (m["numTargetRowsInserted"], m["numTargetRowsUpdated"]) == (3, 4)
    assert (m["numTargetRowsMatchedUpdated"], m["numTargetRowsNotMatchedBySourceUpdated"]) == (3, 1)
    assert (m["numTargetRowsDeleted"], m["numTargetRowsMatchedDeleted"]) == (2, 1)
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 1
    assert (m["numTargetRowsCopied"], m["numOutputRows"]) == (0, 7)
    # every original file loses all its rows: removed, no DV written, nothing rewritten
    assert m["numTargetFilesRemoved"] == len(s.table("t").snapshot(2).files)
    assert m["numTargetDeletionVectorsAdded"] == 0
    assert m["numTargetFilesAdded"] >= 1 and m["numTargetBytesAdded"] > 0
    for name in (
        "numTargetBytesRemoved",
        "numTargetDeletionVectorsRemoved",
        "numTargetDeletionVectorsUpdated",
        "executionTimeMs",
        "scanTimeMs",
        "rewriteTimeMs",
        "materializeSourceTimeMs",
    ):
        assert name in m
    assert history.is_blind_append is False and history.read_version == 2


@pytest.mark.parametrize(
    ("case", "path"),
    [
        ("combined", "split"),
        ("combined", "one join"),
        ("insert_star", "small target"),
        ("insert_star", "split"),
        ("update_conditional", "small target"),
        ("update_conditional", "split"),
    ],
)
def test_merge_over_deleted_rows_matches_duckdb(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch, case: str, path: str
) -> None:
    """Target rows deleted by DVs match nothing: the DV-free scan drops them after the
    join (small target and split join), or the scan applies the DVs (one Spark join)."""
    if path != "small target":  # the persisted join (NOT MATCHED BY SOURCE always takes it)
        monkeypatch.setenv(SMALL_TARGET_ROWS_ENV, "0")
    if path == "one join":
        monkeypatch.setenv(SPLIT_ROWS_ENV, "0")
    _create(s, partitioned=False)
    s.sql("DELETE FROM t WHERE id IN (2, 3)")  # DVs in both files; sources 2 and 3 now insert
    _source_view(spark)
    before = _txsql_rows(s)
    sql = f"{HEAD} {CASES[case]}"
    result = s.sql(sql)
    # source; then one job for a small target, else the write and the summary
    assert result.metrics["spark_jobs"] == (2 if path == "small target" else 3)
    after = _txsql_rows(s)
    assert after == _duckdb_merge(before, SOURCE, sql)
    duck, deltalake = _readers(s.table("t").location, 4)
    assert duck == after and deltalake == after
