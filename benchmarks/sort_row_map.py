"""What a sorting compaction's row order costs: clustering OPTIMIZE with and without it.

    python benchmarks/sort_row_map.py [--rows 2000000] [--runs 3] [--columns k,j]

Two clustered tables of the same rows (``k`` BIGINT in random order, ``j`` INT, ``s`` a
short string), one with ``txsql.rowLevelConcurrency = false`` (no row map is recorded
there: no racing DML could use it). ``OPTIMIZE t FULL`` rewrites every file each run; the
runs alternate between the tables and the median of each is printed, with the row order
file's size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from txsql import Session
from txsql.engine.spark import local_session
from txsql.storage.paths import ROW_ORDER_DIR


def build(s: Session, name: str, rows: int, columns: str, row_level: bool) -> None:
    s.sql(
        f"CREATE TABLE {name} (k BIGINT, j INT, s STRING) CLUSTER BY ({columns}) "
        f"TBLPROPERTIES ('txsql.rowLevelConcurrency' = '{str(row_level).lower()}')"
    )
    factor = 1_000_003 if rows % 1_000_003 else 999_983
    for part in range(4):
        lo, hi = part * rows // 4, (part + 1) * rows // 4
        s.sql(
            f"INSERT INTO {name} SELECT k, CAST(k * 7919 % 100 AS INT), 'row' "
            f"FROM (SELECT (id * {factor}) % {rows} AS k FROM range({lo}, {hi}))"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--columns", default="k,j")
    args = parser.parse_args()
    warehouse = tempfile.mkdtemp(prefix="txsql-bench-sortmap-")
    s = Session(local_session("local[2]", "txsql-bench"), warehouse)
    build(s, "mapped", args.rows, args.columns, True)
    build(s, "unmapped", args.rows, args.columns, False)
    times: dict[str, list[float]] = {"mapped": [], "unmapped": []}
    s.sql("OPTIMIZE unmapped FULL")  # warm-up
    for _ in range(args.runs):
        for name in ("mapped", "unmapped"):
            started = time.perf_counter()
            s.sql(f"OPTIMIZE {name} FULL")
            times[name].append(time.perf_counter() - started)
    orders = os.path.join(s.table("mapped").location, ROW_ORDER_DIR)
    sizes = [os.path.getsize(os.path.join(orders, n)) for n in os.listdir(orders)]
    print(f"{args.rows:,} rows, CLUSTER BY ({args.columns}), {args.runs} runs each")
    for name, values in times.items():
        runs = ", ".join(f"{v:.1f}" for v in values)
        print(f"  {name:9s} median {statistics.median(values):6.2f} s  ({runs})")
    extra = statistics.median(times["mapped"]) - statistics.median(times["unmapped"])
    print(f"  row order: +{extra:.2f} s, order file {max(sizes, default=0) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
