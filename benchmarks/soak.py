"""Memory over a long session: issue 35's mixed session with idle maintenance on.

A tiny table and a 1M-row table take every DML kind (INSERT, UPDATE, DELETE, MERGE),
SELECTs, time travel and DESCRIBE HISTORY; every 50th statement is a transaction across two
tables enrolled in multi-table transactions; every ``--idle-every`` statements the session
sits idle long enough for maintenance to run. Runs ``--warmup`` statements, then
``--statements`` more, and prints per 1,000 statements after the warm-up: the Python
driver's RSS growth, the JVM's heap in use after a full GC (the live objects ``jcmd
GC.class_histogram`` counts, read outside Spark; the classes that grew most are listed),
and what Spark holds (temp views, cached tables, persisted RDDs). The peer is the same
session before the measured statements (growth, not absolute size).

    python benchmarks/soak.py --warmup 300 --statements 3000
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

ENROL = "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
SETUP = [
    "CREATE TABLE t (id BIGINT, v BIGINT)",
    "INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)",
    "CREATE TABLE big AS SELECT id, id % 100 AS v FROM range(1000000)",
    f"CREATE TABLE acct (id BIGINT, balance BIGINT) {ENROL}",
    "INSERT INTO acct VALUES (1, 1000), (2, 1000)",
    f"CREATE TABLE moves (src BIGINT, dst BIGINT, amount BIGINT) {ENROL}",
]
MIX = [
    "UPDATE t SET v = v + 1 WHERE id = 2",
    "SELECT * FROM t",
    "INSERT INTO t VALUES ({i} + 100, 0)",
    "DELETE FROM t WHERE id = {i} + 100",
    "SELECT count(*) FROM t VERSION AS OF 1",
    "MERGE INTO t USING (SELECT 3 AS id, {i} AS v) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    "DESCRIBE HISTORY t",
    "UPDATE big SET v = v + 1 WHERE id % 1000 = {i} % 1000",
    "DELETE FROM big WHERE id = {i} * 7 % 1000000",
    "INSERT INTO big SELECT 1000000 + {i} AS id, 0 AS v",
    "MERGE INTO big USING (SELECT {i} * 13 % 1000000 AS id, -1 AS v) s ON big.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v",
    "SELECT count(*), sum(v) FROM big",
    "SELECT count(*) FROM big VERSION AS OF 1",
]
TRANSFER = """BEGIN;
UPDATE acct SET balance = balance - 1 WHERE id = 1;
UPDATE acct SET balance = balance + 1 WHERE id = 2;
INSERT INTO moves VALUES (1, 2, 1);
COMMIT"""


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


def spark_holdings(spark: Any) -> tuple[int, int, int]:
    """Temp views, cached tables and persisted RDDs Spark holds (none should accumulate)."""
    tables = spark.catalog.listTables()
    views = sum(1 for t in tables if t.isTemporary)
    cached = sum(1 for t in tables if spark.catalog.isCached(t.name))
    persisted = len(spark.sparkContext._jsc.getPersistentRDDs())  # benchmark only: a count
    return views, cached, persisted


def run(session: Session, count: int, start: int, idle_every: int, idle_seconds: float) -> None:
    for i in range(start, start + count):
        text = TRANSFER if i % 50 == 49 else MIX[i % len(MIX)].format(i=i)
        result = session.sql(text)
        if result.df is not None:
            result.df.collect()
        if idle_every and i % idle_every == idle_every - 1:
            time.sleep(idle_seconds)  # the user reads the output: maintenance runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--statements", type=int, default=3000)
    parser.add_argument("--idle-every", type=int, default=100, help="0: never idle")
    parser.add_argument("--no-maintenance", action="store_true")
    args = parser.parse_args()
    idle = 1.0
    session = Session(
        warehouse=tempfile.mkdtemp(prefix="txsql-soak-"),
        maintenance=not args.no_maintenance,
        maintenance_idle_seconds=idle,
    )
    for text in SETUP:
        session.sql(text)
    pid = jvm_pid()
    pause = idle + 4.0  # idle time plus a few maintenance steps on small tables
    run(session, args.warmup, 0, args.idle_every, pause)
    gc.collect()  # Python-side handles of JVM objects go first, then the JVM's own GC
    classes = class_histogram(pid)
    rss_before, held_before = rss_mb(), spark_holdings(session.spark)
    started = time.perf_counter()
    run(session, args.statements, args.warmup, args.idle_every, pause)
    seconds = time.perf_counter() - started
    gc.collect()
    rss_after, held_after = rss_mb(), spark_holdings(session.spark)
    grown = class_histogram(pid)
    history = session.table("big").history()
    marked = history.operationParameters.getItem("txsqlMaintenance") == "true"
    maintained = history.filter(marked).count()
    session.close()
    scale = 1000 / args.statements
    print(f"{args.statements} statements after {args.warmup} warm-up: {seconds:.1f} s")
    print(f"driver RSS growth per 1000: {(rss_after - rss_before) * scale:+.1f} MB")
    if not grown:
        print("JVM heap: jcmd found no Spark JVM")
    live = (sum(grown.values()) - sum(classes.values())) * scale / 2**20
    print(f"JVM heap in use after a full GC (live objects), growth per 1000: {live:+.1f} MB")
    print(
        f"Spark holds (temp views, cached tables, persisted RDDs): {held_before} before, "
        f"{held_after} after"
    )
    print(f"idle maintenance commits on big: {maintained}")
    growth = sorted(((grown[k] - classes.get(k, 0), k) for k in grown), reverse=True)[:12]
    print("JVM classes growing most (MB):")
    for size, name in growth:
        print(f"  {size / 2**20:+8.1f}  {name}")


if __name__ == "__main__":
    main()
