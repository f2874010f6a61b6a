"""Memory over a long session: the 5-statement mix of issue 35 on a 3-row table.

Runs ``--warmup`` statements, then ``--statements`` more, and prints per 1,000 statements
after the warm-up: the Python driver's RSS growth, the JVM's heap in use after a full GC
(the live objects ``jcmd GC.class_histogram`` counts, read outside Spark; the classes that
grew most are listed), and how many temp views Spark's catalog holds. The
peer is the same session before the measured statements (growth, not absolute size).

    python benchmarks/soak.py --warmup 300 --statements 1000
"""

from __future__ import annotations

import argparse
import gc
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


def class_histogram(pid: int | None) -> dict[str, int]:
    """Bytes per JVM class of live objects (``jcmd GC.class_histogram`` runs a full GC)."""
    if pid is None:
        return {}
    text = subprocess.run(
        ["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True, check=False
    ).stdout
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].endswith(":") and parts[2].isdigit():
            sizes[parts[3]] = int(parts[2])
    return sizes


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
    gc.collect()  # Python-side handles of JVM objects go first, then the JVM's own GC
    classes = class_histogram(pid)
    before = (rss_mb(), temp_views(session.spark))
    started = time.perf_counter()
    run(session, args.statements, args.warmup)
    seconds = time.perf_counter() - started
    gc.collect()
    after = (rss_mb(), temp_views(session.spark))
    grown = class_histogram(pid)
    scale = 1000 / args.statements
    print(f"{args.statements} statements after {args.warmup} warm-up: {seconds:.1f} s")
    print(f"driver RSS growth per 1000: {(after[0] - before[0]) * scale:+.1f} MB")
    if not grown:
        print("JVM heap: jcmd found no Spark JVM")
    live = (sum(grown.values()) - sum(classes.values())) * scale / 2**20
    print(f"JVM heap in use after a full GC (live objects), growth per 1000: {live:+.1f} MB")
    print(f"temp views in Spark's catalog: {before[1]} before, {after[1]} after")
    growth = sorted(((grown[k] - classes.get(k, 0), k) for k in grown), reverse=True)[:12]
    print("JVM classes growing most (MB):")
    for size, name in growth:
        print(f"  {size / 2**20:+8.1f}  {name}")


if __name__ == "__main__":
    main()
