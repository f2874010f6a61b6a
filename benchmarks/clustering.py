"""Data skipping on clustered, partitioned and unclustered tables: files touched and time.

    python benchmarks/clustering.py [--rows 2000000] [--inserts 8] [--target 1mb]

Builds three tables of the same rows (``k`` BIGINT 0..rows-1 in random order, ``j`` INT
``k * 7919 % 100``, ``s`` a short string) in ``--inserts`` INSERT statements, with
``delta.targetFileSize`` set to ``--target``:

* clustered: ``CLUSTER BY (k)``, then ``OPTIMIZE`` (sorted by k);
* clustered2: ``CLUSTER BY (k, j)``, then ``OPTIMIZE`` (Z-order over k and j);
* partitioned: ``PARTITIONED BY (b)`` with ``b = k DIV (rows / 16)`` (16 partitions by k);
* unclustered: the INSERTs as written, then ``OPTIMIZE`` (bin-packing only).

For a point query on ``k``, a range query (0.5 % of the keys) and a 2-column predicate
(``k < rows / 4 AND j = 5``) it prints the files a reader may skip to, judged from the
log's own min/max stats and partition values (counted here from the add actions), and the
median time of the query through ``Session.sql`` (3 runs after a warm-up). Z-order is the
only curve txsql builds (no Hilbert), so no curve comparison is printed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from typing import Any

from txsql import Session


def build(s: Session, name: str, layout: str, rows: int, inserts: int, target: str) -> None:
    clause = {
        "clustered": "CLUSTER BY (k)",
        "clustered2": "CLUSTER BY (k, j)",
        "partitioned": "PARTITIONED BY (b)",
    }.get(layout, "")
    s.sql(
        f"CREATE TABLE {name} (k BIGINT, j INT, s STRING, b INT) {clause} "
        f"TBLPROPERTIES ('delta.targetFileSize' = '{target}')"
    )
    width = max(1, rows // 16)
    # A random permutation of 0..rows-1 (k = id * a mod rows, a coprime with rows).
    factor = 1_000_003 if rows % 1_000_003 else 999_983
    per = rows // inserts
    for part in range(inserts):
        s.sql(
            f"INSERT INTO {name} SELECT k, CAST(k * 7919 % 100 AS INT), 'row', "
            f"CAST(k DIV {width} AS INT) FROM (SELECT (id * {factor}) % {rows} AS k "
            f"FROM range({part * per}, {(part + 1) * per}))"
        )
    if layout != "partitioned":
        s.sql(f"OPTIMIZE {name}")


def files_touched(s: Session, name: str, rows: int, lo: int, hi: int, j: int | None) -> int:
    """Files whose stats (and partition value) allow k in [lo, hi] (and j = ``j``)."""
    snapshot = s.table(name).log.snapshot()
    width = max(1, rows // 16)
    touched = 0
    for f in snapshot.files:
        stats: dict[str, Any] = json.loads(f.stats or "{}")
        low, high = stats.get("minValues", {}), stats.get("maxValues", {})
        if "b" in f.partition_values:
            b = int(f.partition_values["b"] or 0)
            k_lo, k_hi = b * width, (b + 1) * width - 1
        else:
            k_lo, k_hi = low.get("k", lo), high.get("k", hi)
        if k_hi < lo or k_lo > hi:
            continue
        if j is not None and not (low.get("j", j) <= j <= high.get("j", j)):
            continue
        touched += 1
    return touched


def timed(s: Session, sql: str) -> float:
    s.sql(sql).df.collect()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        s.sql(sql).df.collect()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--inserts", type=int, default=8)
    parser.add_argument("--target", default="1mb")
    args = parser.parse_args()
    s = Session(warehouse=tempfile.mkdtemp(prefix="txsql-bench-cluster-"))
    probe = random.Random(5).randrange(args.rows)
    span = max(1, args.rows // 200)
    queries = [
        ("point k", f"SELECT count(*) FROM {{t}} WHERE k = {probe}", probe, probe, None),
        (
            "range 0.5 %",
            f"SELECT count(*) FROM {{t}} WHERE k BETWEEN {probe} AND {probe + span}",
            probe,
            probe + span,
            None,
        ),
        (
            "k < n/4 AND j = 5",
            f"SELECT count(*) FROM {{t}} WHERE k < {args.rows // 4} AND j = 5",
            0,
            args.rows // 4 - 1,
            5,
        ),
    ]
    print(f"{args.rows:,} rows in {args.inserts} inserts, targetFileSize {args.target}")
    for layout in ("clustered", "clustered2", "partitioned", "unclustered"):
        started = time.perf_counter()
        build(s, layout, layout, args.rows, args.inserts, args.target)
        total = len(s.table(layout).log.snapshot().files)
        print(f"{layout}: {total} files, built in {time.perf_counter() - started:.1f} s")
        for label, sql, lo, hi, j in queries:
            touched = files_touched(s, layout, args.rows, lo, hi, j)
            seconds = timed(s, sql.format(t=layout))
            print(f"  {label:18s} files {touched:4d} / {total:4d}   {seconds:6.3f} s")


if __name__ == "__main__":
    main()
