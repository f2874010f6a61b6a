"""MERGE's big-target plan vs the narrow join (issue 22), Spark work only, one session.

Run: ``python benchmarks/merge_strategies.py [--rows N] [--files F] [--repeat R]``
(default 5,000,000 rows in 10 files; the table and the MERGE source are those of
``benchmarks/dml.py``: N/50 source rows, half matching ids spread over the table).

Times, interleaved in one ``local[2]`` session, each after one untimed run (median of
``--repeat``), wall clock and the JVM's CPU seconds (``/proc/<pid>/stat``: steadier than
wall clock when other processes share the machine):

* ``txsql MERGE``: the statement through ``txsql.Session`` on a fresh copy of the table;
* ``plain Spark``: ``benchmarks/dml.py``'s peer (broadcast join + anti-join, write);
* ``one wide join``: the Spark work of txsql's plan by hand on the Parquet files: every
  target column plus file path and row index joined with the broadcast source, matched
  rows persisted, unmatched source rows by their ids, one write, matched positions
  collected;
* ``narrow join``: the issue's suggestion by hand: the ON column plus file path and row
  index joined with the source, matched positions persisted and collected; full rows
  read again only from the files with matches, semi-joined on (file, row index), joined
  with their source rows for the new values; one write.

No assertions; prints the figures and the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TXSQL_DRIVER_MEMORY", "4g")

import dml  # the same table, source and plain peer

import txsql
from txsql.engine.spark import local_session

MERGE = (
    "MERGE INTO delta.`{path}` AS t USING bench_source AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
)


def jvm_cpu(spark: Any) -> Callable[[], float]:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    ticks = os.sysconf("SC_CLK_TCK")

    def seconds() -> float:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    return seconds


def wide_join(spark: Any, plain: str, out: str) -> Callable[[], Any]:
    from pyspark.sql import functions as F

    def run() -> Any:
        source = spark.table("bench_source").withColumn("sid", F.monotonically_increasing_id())
        source = source.persist()
        source.write.format("noop").mode("overwrite").save()
        target = spark.read.parquet(plain).selectExpr(
            "*", "_metadata.file_path AS f", "_metadata.row_index AS r"
        )
        s = source.alias("s")
        matched = target.alias("t").join(s, F.col("t.id") == F.col("s.id"))
        matched = matched.select(
            "f", "r", "sid", F.col("t.id").alias("id"), f"t.{dml.K}", "s.v", "t.s"
        ).persist()
        ids = matched.select("sid")
        inserted = source.join(F.broadcast(ids), "sid", "left_anti").drop("sid")
        new = matched.select("id", dml.K, "v", "s").unionByName(inserted)
        new.write.mode("append").parquet(out)
        positions = matched.select("f", "r").toArrow()
        matched.unpersist()
        source.unpersist()
        return positions

    return run


def narrow_join(spark: Any, plain: str, out: str) -> Callable[[], Any]:
    from pyspark.sql import functions as F

    def run() -> Any:
        source = spark.table("bench_source").withColumn("sid", F.monotonically_increasing_id())
        source = source.persist()
        source.write.format("noop").mode("overwrite").save()
        keys = spark.read.parquet(plain).selectExpr(
            "id", "_metadata.file_path AS f", "_metadata.row_index AS r"
        )
        s = source.alias("s")
        positions = keys.alias("t").join(s.select("id", "sid").alias("s"), "id")
        positions = positions.select("f", "r", "sid").persist()
        found = positions.toArrow()  # the DVs' and the read set's positions
        files = sorted(set(found.column("f").to_pylist()))
        full = spark.read.parquet(*files).selectExpr(
            "*", "_metadata.file_path AS f", "_metadata.row_index AS r"
        )
        rows = full.join(F.broadcast(positions), ["f", "r"])
        updated = rows.alias("t").join(F.broadcast(source.alias("s")), "sid")
        updated = updated.select(F.col("t.id").alias("id"), f"t.{dml.K}", "s.v", "t.s")
        inserted = source.join(F.broadcast(positions.select("sid")), "sid", "left_anti")
        updated.unionByName(inserted.drop("sid")).write.mode("append").parquet(out)
        positions.unpersist()
        source.unpersist()
        return found

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=int, default=int(os.environ.get("TXSQL_BENCH_ROWS", 5_000_000))
    )
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = local_session("local[2]", "txsql-bench-merge-strategies")
    cpu = jvm_cpu(spark)
    with tempfile.TemporaryDirectory(prefix="txsql-bench-merge-") as tmp:
        s = txsql.Session(spark=spark, warehouse=os.path.join(tmp, "wh"))
        base = os.path.join(tmp, "t")
        dml.build_txsql(s, base, args.rows, args.files)
        work = dml.Workload(args.rows, spark)
        plain, out = os.path.join(tmp, "plain"), os.path.join(tmp, "out")
        parquet = sorted(os.path.join(base, f) for f in os.listdir(base) if f.endswith(".parquet"))
        spark.read.parquet(*parquet).write.parquet(plain)

        copies = iter(range(1_000_000))

        def txsql_merge() -> Any:
            path = f"{base}_{next(copies)}"
            shutil.copytree(base, path)
            return s.sql(MERGE.format(path=path))

        peers: dict[str, Callable[[], Any]] = {
            "txsql MERGE": txsql_merge,
            "plain Spark": work.plain_spark_ops(spark, plain, out)[2],
            "one wide join (txsql's plan)": wide_join(spark, plain, out),
            "narrow join": narrow_join(spark, plain, out),
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in peers}
        for r in range(args.repeat + 1):
            for name, fn in peers.items():
                c0, t0 = cpu(), time.perf_counter()
                fn()
                wall, used = time.perf_counter() - t0, cpu() - c0
                if r:
                    times[name].append((wall, used))
        print(
            f"MERGE of {work.source.num_rows:,} source rows into {args.rows:,} rows / "
            f"{args.files} files, local[2], medians of {args.repeat}: wall s / JVM CPU s"
        )
        plain_wall = statistics.median(w for w, _ in times["plain Spark"])
        for name, runs in times.items():
            wall = statistics.median(w for w, _ in runs)
            used = statistics.median(c for _, c in runs)
            print(f"  {name:30s} {wall:6.2f} / {used:6.2f}   {wall / plain_wall:.2f}x plain")
        print("  load average:", os.getloadavg())
    spark.stop()


if __name__ == "__main__":
    main()
