"""Memory over a long session: the 5-statement mix of issue 35 on a 3-row table.

Runs ``--warmup`` statements, then ``--statements`` more, and prints per 1,000 statements
after the warm-up: the Python driver's RSS growth, the JVM's heap in use after a full GC
(read with ``jcmd``, outside Spark), and how many temp views Spark's catalog holds. The
peer is the same session before the measured statements (growth, not absolute size).

    python benchmarks/soak.py --warmup 300 --statements 1000
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import tempfile
import time
from typing import Any

from txsql import Session

MIX = [
    "UPDATE t SET v = v + 1 WHERE id = 2",
    "SELECT * FROM t",
    "INSERT INTO t VALUES ({i} + 100, 0)",
    "DELETE FROM t WHERE id = {i} + 100",
    "SELECT count(*) FROM t VERSION AS OF 1",
]


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def jvm_pid() -> int | None:
    found = subprocess.run(["jcmd", "-l"], capture_output=True, text=True, check=False)
    for line in found.stdout.splitlines():
        if "SparkSubmit" in line or "pyspark" in line:
            return int(line.split()[0])
    return None


def heap_after_gc_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=False)
    info = subprocess.run(
        ["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, check=False
    ).stdout
    used = re.search(r"used (\d+)K", info)
    return int(used.group(1)) / 1024 if used else None


def temp_views(spark: Any) -> int:
    return sum(1 for t in spark.catalog.listTables() if t.isTemporary)


def run(session: Session, count: int, start: int) -> None:
    for i in range(start, start + count):
        result = session.sql(MIX[i % len(MIX)].format(i=i))
        if result.df is not None:
            result.df.collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--statements", type=int, default=1000)
    args = parser.parse_args()
    session = Session(warehouse=tempfile.mkdtemp(prefix="txsql-soak-"))
    session.sql("CREATE TABLE t (id BIGINT, v BIGINT)")
    session.sql("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
    pid = jvm_pid()
    run(session, args.warmup, 0)
    before = (rss_mb(), heap_after_gc_mb(pid), temp_views(session.spark))
    started = time.perf_counter()
    run(session, args.statements, args.warmup)
    seconds = time.perf_counter() - started
    after = (rss_mb(), heap_after_gc_mb(pid), temp_views(session.spark))
    scale = 1000 / args.statements
    print(f"{args.statements} statements after {args.warmup} warm-up: {seconds:.1f} s")
    print(f"driver RSS growth per 1000: {(after[0] - before[0]) * scale:+.1f} MB")
    if before[1] is not None and after[1] is not None:
        print(f"JVM heap after full GC, growth per 1000: {(after[1] - before[1]) * scale:+.1f} MB")
    else:
        print("JVM heap: jcmd found no Spark JVM")
    print(f"temp views in Spark's catalog: {before[2]} before, {after[2]} after")


if __name__ == "__main__":
    main()
