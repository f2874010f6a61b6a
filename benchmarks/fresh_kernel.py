"""The quickstart's statements in a fresh kernel, with and without the background warm-up.

Run: ``python benchmarks/fresh_kernel.py`` (``TXSQL_BENCH_RUNS`` fresh processes per mode,
default 3; ``TXSQL_BENCH_THINK`` seconds between ``%load_ext`` and the first cell, default
10). Prints medians and the ratios to warm times.

Each run is one fresh Python process with an in-process IPython shell, as in a new
notebook: ``%load_ext txsql`` (Spark starts in the background), ``THINK`` seconds of a user
typing, then the quickstart's statements as ``%%txsql`` cells, each timed: CREATE, INSERT,
UPDATE, DELETE, MERGE, SELECT, time travel, DESCRIBE HISTORY. Then the same statements on
a second table in the same process: the warm times. Modes: ``TXSQL_WARMUP=1`` (default)
and ``TXSQL_WARMUP=0``. Goal (issue 22): with the warm-up, INSERT, UPDATE and MERGE each
<= 1.5x their warm time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("TXSQL_BENCH_RUNS", "3"))
THINK = float(os.environ.get("TXSQL_BENCH_THINK", "10"))
STATEMENTS = {
    "CREATE": "CREATE TABLE {t} (id BIGINT, city STRING, km DOUBLE)",
    "INSERT": "INSERT INTO {t} VALUES (1, 'Oslo', 12.5), (2, 'Lima', 3.0), (3, 'Oslo', 7.0), "
    "(4, 'Rome', 1.0)",
    "UPDATE": "UPDATE {t} SET km = km * 2 WHERE city = 'Lima'",
    "DELETE": "DELETE FROM {t} WHERE id = 3",
    "MERGE": "MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'Lima', 4.0), (9, 'Rome', 1.5) "
    "AS u(id, city, km)) u ON t.id = u.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "SELECT": "SELECT * FROM {t}",
    "time travel": "SELECT * FROM {t} VERSION AS OF 1",
    "HISTORY": "DESCRIBE HISTORY {t}",
}
GOALS = ("INSERT", "UPDATE", "MERGE")


def child(warehouse: str) -> dict[str, dict[str, float]]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "txsql")
    time.sleep(THINK)  # the user typing the first cell
    shell.run_line_magic("config", f"TxSql.warehouse = {warehouse!r}")
    times: dict[str, dict[str, float]] = {"fresh": {}, "warm": {}}
    for phase, table in (("fresh", "trips"), ("warm", "trips2")):
        for name, sql in STATEMENTS.items():
            started = time.perf_counter()
            shell.run_cell_magic("txsql", "-q", sql.format(t=table))
            times[phase][name] = time.perf_counter() - started
    return times


def run(warmup: bool) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="txsql-fresh-") as warehouse:
        env = dict(os.environ, TXSQL_WARMUP="1" if warmup else "0")
        env.setdefault("PYTHONPATH", os.getcwd())
        out = subprocess.run(
            [sys.executable, __file__, "--child", warehouse],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise SystemExit(f"child failed:\n{out.stderr[-3000:]}")
        result: dict[str, dict[str, float]] = json.loads(out.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    runs: dict[bool, list[dict[str, dict[str, float]]]] = {True: [], False: []}
    for _ in range(RUNS):  # interleaved, so machine load hits both modes alike
        for warmup in (True, False):
            runs[warmup].append(run(warmup))

    def median(warmup: bool, phase: str, name: str) -> float:
        return statistics.median(r[phase][name] for r in runs[warmup])

    print(f"medians of {RUNS} fresh processes, first cell {THINK:g} s after %load_ext")
    print(f"{'statement':<12} {'warm-up':>8} {'no warm-up':>11} {'warm':>7} {'ratio':>7} goal")
    for name in STATEMENTS:
        with_warmup, without = median(True, "fresh", name), median(False, "fresh", name)
        warm = statistics.median([median(True, "warm", name), median(False, "warm", name)])
        goal = "<= 1.5x" if name in GOALS else ""
        print(
            f"{name:<12} {with_warmup:7.2f}s {without:10.2f}s {warm:6.2f}s "
            f"{with_warmup / warm:6.2f}x {goal}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
    else:
        main()
