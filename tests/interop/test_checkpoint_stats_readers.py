"""A checkpoint txsql writes with ``stats_parsed`` only (writeStatsAsJson=false,
writeStatsAsStruct=true) is enough for DuckDB's delta extension and deltalake.

The commits the checkpoint covers are deleted, so the other readers must take the file
list, partition values and stats struct from txsql's checkpoint alone.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.log.replay import load_snapshot
from txsql.log.segment import find_segment
from txsql.storage import LocalFileIO, LogStore

pytestmark = [pytest.mark.spark, pytest.mark.interop]


@pytest.mark.parametrize("policy", ["classic", "v2"])
def test_struct_only_checkpoint_is_enough_for_other_readers(
    spark: Any, tmp_path: Path, policy: str
) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE c (id BIGINT, s STRING, d DATE, dec DECIMAL(10,2), "
        "n STRUCT<x: INT, y: STRING>, p STRING) PARTITIONED BY (p) TBLPROPERTIES ("
        "'delta.checkpoint.writeStatsAsJson' = 'false', "
        "'delta.checkpoint.writeStatsAsStruct' = 'true', "
        f"'delta.checkpointPolicy' = '{policy}')"
    )
    for i in range(10):
        s.sql(
            f"INSERT INTO c VALUES ({i}, 's{i}', DATE'2024-01-{i + 1:02d}', {i}.25, "
            f"named_struct('x', {i}, 'y', 'y{i}'), 'x{i % 2}')"
        )
    path = s.table("c").location
    log = Path(path) / "_delta_log"
    (checkpoint,) = log.glob(f"{10:020d}.checkpoint*.parquet")
    add = pq.read_schema(checkpoint).field("add").type
    assert "stats" not in add.names and "stats_parsed" in add.names
    assert "partitionValues_parsed" in add.names
    for version in range(10):
        (log / f"{version:020d}.json").unlink()
    expected = [
        (i, f"s{i}", dt.date(2024, 1, i + 1), Decimal(f"{i}.25"), f"x{i % 2}") for i in range(10)
    ]
    columns = "id, s, d, dec, p"
    assert duckdb_rows(path, 10, columns) == expected
    assert deltalake_rows(path, 10, columns) == expected
    # txsql's own reader, cold, rebuilds the stats JSON from the struct.
    store = LogStore(path, LocalFileIO())
    stats = [f.stats for f in load_snapshot(store, find_segment(store)).files]
    assert len(stats) == 10 and all(x is not None and '"numRecords":1' in x for x in stats)
