"""Scan of a 5M-row table with 1 % of rows deleted by DVs vs a plain Spark Parquet scan.

Builds the table in a temp dir with txsql's writer, deletes 1 % random rows of every file
through deletion vectors (one remove + add-with-DV per file, stats copied with
``tightBounds: false``), then times ``count()`` and ``sum(value)`` through
``scan_snapshot`` and through ``spark.read.parquet`` of the same files (which ignores the
DVs). Run: ``python benchmarks/scan.py [rows] [files]`` (``local[2]``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pyroaring import BitMap64

os.environ.setdefault("TXSQL_DRIVER_MEMORY", "4g")

from txsql.dv.store import write_deletion_vectors
from txsql.engine.scan import resolve_path, scan_snapshot
from txsql.engine.spark import local_session
from txsql.engine.write import write_data_files
from txsql.log.actions import CommitInfo, Metadata, Protocol, RemoveFile
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.logstore import LogStore

REPEAT = 5


def build(spark: Any, root: str, rows: int, files: int) -> None:
    df = (
        spark.range(rows)
        .selectExpr("id", "rand(7) * 100 as value", "concat('name-', id % 1000) as name")
        .repartition(files)
    )
    meta = Metadata(
        id="bench",
        schema_string=df.schema.json(),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    adds = write_data_files(spark, df, root, meta)
    store = LogStore(root, LocalFileIO())
    protocol = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    store.write_if_absent(
        0,
        encode_commit(
            [
                CommitInfo(timestamp=int(time.time() * 1000), operation="WRITE"),
                protocol,
                meta,
                *adds,
            ]
        ),
    )
    rng = np.random.default_rng(0)
    bitmaps = []
    for add in adds:
        n = json.loads(add.stats or "{}")["numRecords"]
        bitmaps.append(BitMap64(rng.choice(n, n // 100, replace=False).tolist()))
    descriptors = write_deletion_vectors(root, LocalFileIO(), bitmaps)
    actions: list[Any] = [CommitInfo(timestamp=int(time.time() * 1000), operation="DELETE")]
    now = int(time.time() * 1000)
    for add, dv in zip(adds, descriptors):
        stats = json.loads(add.stats or "{}") | {"tightBounds": False}
        actions.append(
            RemoveFile(
                add.path, now, True, True, add.partition_values, add.size, deletion_vector=None
            )
        )
        actions.append(dataclasses.replace(add, deletion_vector=dv, stats=json.dumps(stats)))
    store.write_if_absent(1, encode_commit(actions))


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(first run, best of REPEAT more, result)."""
    start = time.perf_counter()
    result = fn()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return first, best, result


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    spark = local_session("local[2]", "txsql-bench-scan")
    with tempfile.TemporaryDirectory(prefix="txsql-bench-") as tmp:
        root = os.path.join(tmp, "t")
        t0 = time.perf_counter()
        build(spark, root, rows, files)
        print(
            f"built {rows:,} rows in {files} files with 1 % deleted: "
            f"{time.perf_counter() - t0:.1f} s"
        )
        snapshot = DeltaLog.for_path(root).snapshot()
        paths = [resolve_path(root, f.path) for f in snapshot.files]

        def txsql_count() -> int:
            return int(scan_snapshot(spark, snapshot).count())

        def txsql_sum() -> float:
            return float(scan_snapshot(spark, snapshot).agg({"value": "sum"}).first()[0])

        def plain_count() -> int:
            return int(spark.read.parquet(*paths).count())

        def plain_sum() -> float:
            return float(spark.read.parquet(*paths).agg({"value": "sum"}).first()[0])

        timed(plain_count)  # warm the JVM before measuring anything
        print(f"{'query':18} {'first s':>8} {'best s':>8}  result")
        results = {}
        for name, fn in [
            ("plain count", plain_count),
            ("txsql count", txsql_count),
            ("plain sum", plain_sum),
            ("txsql sum", txsql_sum),
        ]:
            first, best, value = timed(fn)
            results[name] = best
            print(f"{name:18} {first:8.3f} {best:8.3f}  {value}")
        for query in ("count", "sum"):
            ratio = results[f"txsql {query}"] / results[f"plain {query}"]
            print(f"ratio {query}: {ratio:.2f}x (goal <= 1.2x)")
    spark.stop()


if __name__ == "__main__":
    main()
