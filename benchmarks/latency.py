"""Notebook latency: the first statement after ``%load_ext txsql``, a 10-row INSERT, and the
quickstart's statements in a fresh kernel.

Run: ``python benchmarks/latency.py`` (``TXSQL_BENCH_RUNS`` fresh processes per cold
measurement, default 3; ``TXSQL_BENCH_INSERTS`` timed INSERTs, default 15). Prints medians.

Every cold number is one fresh Python process (a new JVM), so imports and the JVM launch are
counted, as in a new notebook:

1. ``spark start`` (the peer): ``import pyspark``, ``SparkSession.builder.master("local[2]")
   .getOrCreate()`` and one trivial action (``spark.range(1).collect()``), i.e. what a
   notebook pays before Spark answers its first query.
2. ``first statement, background start``: in an in-process IPython shell, the time from
   ``%load_ext txsql`` to the end of the first ``%%txsql`` cell, a 10-row ``INSERT ...
   VALUES`` into an existing table, run right after the load (no think time: the worst case
   for the background start).
   Also the cell's own time when the user takes ``TXSQL_BENCH_THINK`` seconds (default 5)
   to type it after the load: what the notebook user actually waits for.
3. ``first statement, no background start``: the same with ``TXSQL_BACKGROUND_START=0``
   (Spark starts when the statement needs it; the behaviour before the background start).
4. ``10-row INSERT, warm``: the median of ``TXSQL_BENCH_INSERTS`` ``Session.sql("INSERT INTO
   t VALUES (10 rows)")`` on a warm session, with the time split into the phases of
   ``planner.writes.run_insert``: snapshot + VALUES query, conform to the table schema,
   Spark's Parquet write job (plus file moves, fsync, stats from the footers), and commit.

5. The quickstart's statements in a fresh kernel, with and without the background
   warm-up, against their warm times: :mod:`fresh_kernel` (also runnable alone; its
   docstring says how it measures).

Goals (issue 10): first statement <= spark start + 1 s; 10-row INSERT <= 0.25 s. Issue 22:
in a fresh kernel, with the warm-up, INSERT, UPDATE and MERGE each <= 1.5x warm.

Measured 2026-11-24 on the idle 2-core machine (medians of 3 fresh processes): spark start
4.79 s; first statement with background start 5.49 s (+0.70 s), without 5.55 s; the first
cell's own time after 5 s of typing 0.61 s. Warm 10-row INSERT: 0.155 s median of 15 (write
job and stats 0.116 s, everything else 0.03 s). Earlier, on the machine shared with other
jobs (load 5-15): spark start 10.5 s, first statement +1.3 s; a first version that warmed
to the end before the cell ran cost +7 s at once (the read and mapInArrow steps), hence the
warm-up stopping when a cell waits.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

import fresh_kernel

RUNS = int(os.environ.get("TXSQL_BENCH_RUNS", "3"))
THINK = float(os.environ.get("TXSQL_BENCH_THINK", "5"))
INSERTS = int(os.environ.get("TXSQL_BENCH_INSERTS", "15"))
VALUES = ", ".join(f"({i}, 'name-{i}', {i}.25)" for i in range(10))
SCHEMA = "id BIGINT, name STRING, v DOUBLE"


def spark_start() -> dict[str, float]:
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    session = spark.getOrCreate()
    session.range(1).collect()
    return {"seconds": time.perf_counter() - started}


def first_statement(warehouse: str, think: float) -> dict[str, float]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    started = time.perf_counter()
    shell.run_line_magic("load_ext", "txsql")
    loaded = time.perf_counter()
    time.sleep(think)  # the user typing the first cell
    shell.run_line_magic("config", f"TxSql.warehouse = {warehouse!r}")
    cell_started = time.perf_counter()
    result = shell.run_cell_magic("txsql", "", f"INSERT INTO t VALUES {VALUES}")
    assert result is None or "WRITE" in repr(result), result
    done = time.perf_counter()
    return {
        "seconds": done - started - think,
        "load_ext": loaded - started,
        "cell": done - cell_started,
    }


def warm_inserts(warehouse: str) -> dict[str, Any]:
    import txsql.planner.operations.writes as writes
    from txsql.engine.spark import local_session
    from txsql.planner.context import RunContext
    from txsql.session import Session

    spark = local_session("local[2]")
    session = Session(spark=spark, warehouse=warehouse)
    session.sql(f"CREATE TABLE IF NOT EXISTS t ({SCHEMA})")
    phases: dict[str, float] = defaultdict(float)

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phases[name] += time.perf_counter() - began

        return wrapper

    writes.query_dataframe = timed("snapshot+query", writes.query_dataframe)  # type: ignore[assignment]
    writes.conform_to_schema = timed("conform", writes.conform_to_schema)  # type: ignore[assignment]
    writes.write_data_files = timed("write job+stats", writes.write_data_files)  # type: ignore[assignment]
    RunContext.commit = timed("commit", RunContext.commit)  # type: ignore[method-assign]
    for _ in range(5):  # warm-up: JIT, caches, Python worker
        session.sql(f"INSERT INTO t VALUES {VALUES}")
    phases.clear()
    times = []
    for _ in range(INSERTS):
        began = time.perf_counter()
        session.sql(f"INSERT INTO t VALUES {VALUES}")
        times.append(time.perf_counter() - began)
    total = sum(times)
    return {
        "median": statistics.median(times),
        "min": min(times),
        "phases": {name: seconds / INSERTS for name, seconds in phases.items()},
        "other": (total - sum(phases.values())) / INSERTS,
    }


def _child(
    mode: str, warehouse: str, background: bool = True, think: float = 0.0
) -> dict[str, Any]:
    env = dict(os.environ, TXSQL_BACKGROUND_START="1" if background else "0")
    env["TXSQL_BENCH_THINK_NOW"] = str(think)
    env.setdefault("PYTHONPATH", os.getcwd())
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, warehouse],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="txsql-latency-") as warehouse:
        insert = _child("inserts", warehouse)  # also creates the table the cold runs use
        peers, background, foreground, typed = [], [], [], []
        for _ in range(RUNS):  # interleaved, so machine load hits all of them alike
            peers.append(_child("spark_start", warehouse)["seconds"])
            background.append(_child("first", warehouse)["seconds"])
            foreground.append(_child("first", warehouse, background=False)["seconds"])
            typed.append(_child("first", warehouse, think=THINK)["cell"])
    peer = statistics.median(peers)
    print(f"medians of {RUNS} fresh processes (machine may be shared: compare within a run)")
    print(f"  spark start (peer)                      {peer:6.2f} s   {_all(peers)}")
    first = statistics.median(background)
    print(f"  first statement, background start       {first:6.2f} s   {_all(background)}")
    print(f"    minus spark start                     {first - peer:+6.2f} s   (goal <= +1 s)")
    print(
        f"  first statement, no background start    {statistics.median(foreground):6.2f} s"
        f"   {_all(foreground)}"
    )
    print(
        f"  first cell's own time after {THINK:g} s of typing {statistics.median(typed):6.2f} s"
        f"   {_all(typed)}"
    )
    print(f"10-row INSERT ... VALUES, warm session, median of {INSERTS}:")
    print(f"  total                                   {insert['median']:6.3f} s   (goal <= 0.25 s)")
    for name, seconds in insert["phases"].items():
        print(f"    {name:<37} {seconds:6.3f} s")
    print(f"    {'parse, plan, result (rest)':<37} {insert['other']:6.3f} s")
    print("the quickstart's statements in a fresh kernel (benchmarks/fresh_kernel.py):")
    fresh_kernel.main()


def _all(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        mode, warehouse = sys.argv[2], sys.argv[3]
        if mode == "spark_start":
            result: dict[str, Any] = spark_start()
        elif mode == "first":
            result = first_statement(warehouse, float(os.environ["TXSQL_BENCH_THINK_NOW"]))
        else:
            result = warm_inserts(warehouse)
        print(json.dumps(result))
    else:
        main()
