"""MERGE over row indexes past the first 32768 of a file.

The summary builds per-file bitmaps from collected (file CRC, row index) pairs or, for
many target rows, from Spark's 32768-row ``bitmap_construct_agg`` buckets (both run
here); the join drops deleted target rows with a bucket-bitmap join, so row indexes in
later buckets (and at their edges) must land on the right rows. One file of 70,000
rows, row index = id; DuckDB runs the same MERGE on plain tables as the oracle, and
DuckDB's delta_scan and deltalake must read the result alike.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import txsql
from tests.interop.readers import duckdb_connection
from tests.planner.operations.merge.test_merge import _readers
from txsql.errors import MergeCardinalityError
from txsql.planner.operations.merge import summary

pytestmark = pytest.mark.spark

ROWS = 70_000
DELETED = (5, 32767, 32768, 40000, 65536)  # bucket edges and a row in the second bucket
SOURCE = [*DELETED, 0, 3, 32766, 32769, 40001, 65535, 65537, ROWS - 1, ROWS, ROWS + 5]
MERGE = (
    "MERGE INTO t USING src ON t.id = src.id "
    "WHEN MATCHED AND src.id % 2 = 1 THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET v = -src.id "
    "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (src.id, src.id + 1000000, 0)"
)


@pytest.fixture(params=["collected", "grouped_by_spark"])
def s(
    spark: Any, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> txsql.Session:
    if request.param == "grouped_by_spark":  # as for a MERGE touching many target rows
        monkeypatch.setattr(summary, "DIRECT_ROWS", -1)
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id BIGINT, v BIGINT, p INT)")
    # One Spark partition: one file whose row index is the id.
    session.sql(f"INSERT INTO t SELECT id, id AS v, 0 AS p FROM range(0, {ROWS}, 1, 1)")
    session.sql(f"DELETE FROM t WHERE id IN {DELETED}")
    return session


def _rows(s: txsql.Session) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in s.sql("SELECT id, v, p FROM t").df.collect())


def _oracle(target: Counter[tuple[Any, ...]], source: list[int]) -> Counter[tuple[Any, ...]]:
    con = duckdb_connection()
    try:
        rows = list(target.elements())
        frame = pa.table({c: [r[i] for r in rows] for i, c in enumerate(("id", "v", "p"))})
        con.register("target_rows", frame)
        con.execute("CREATE TABLE t AS SELECT id, v, CAST(p AS INTEGER) AS p FROM target_rows")
        con.execute("CREATE TABLE src (id BIGINT)")
        con.executemany("INSERT INTO src VALUES (?)", [(i,) for i in source])
        con.execute(MERGE)
        return Counter(con.execute("SELECT id, v, p FROM t").fetchall())
    finally:
        con.close()


def test_rows_past_the_first_bucket_match_duckdb(s: txsql.Session, spark: Any) -> None:
    assert len(list(Path(s.table("t").location).glob("*.parquet"))) == 1
    spark.createDataFrame([(i,) for i in SOURCE], "id long").createOrReplaceTempView("src")
    before = _rows(s)
    result = s.sql(MERGE)
    after = _rows(s)
    assert after == _oracle(before, SOURCE)
    live = [i for i in SOURCE if i < ROWS and i not in DELETED]
    assert result.metrics["num_deleted_rows"] == sum(1 for i in live if i % 2 == 1)
    assert result.metrics["num_updated_rows"] == sum(1 for i in live if i % 2 == 0)
    assert result.metrics["num_inserted_rows"] == len(SOURCE) - len(live)
    duck, deltalake = _readers(s.table("t").location, s.table("t").version())
    assert duck == deltalake == after


def test_duplicate_match_past_the_first_bucket_fails(s: txsql.Session, spark: Any) -> None:
    spark.createDataFrame([(50000,), (50000,), (1,)], "id long").createOrReplaceTempView("src")
    version = s.table("t").version()
    with pytest.raises(MergeCardinalityError):
        s.sql("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET v = 0")
    assert s.table("t").version() == version
