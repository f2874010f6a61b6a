"""Idle maintenance on a 5M-row table with 1 % and 10 % of rows deleted.

For each fraction: the session DELETEs that fraction (deletion vectors), then idles.
Prints how long maintenance takes to purge the deletion vectors (from the end of the
DELETE to its REORG commit, including ``--idle`` seconds of idleness), and what it costs a
user statement that starts in the middle of it: ``SELECT count(*) ... WHERE v = 3`` started
``--into`` seconds after the step began, against the same statement on the same version
with maintenance off (the peer); the difference is what the statement waited for
maintenance to let go (the goal: ~100 ms) and any cleanup still running beside it.

    python benchmarks/maintenance.py [--rows 5000000] [--idle 0.5] [--into 1.0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import txsql
from txsql.engine.spark import local_session

QUERY = "SELECT count(*) AS n FROM t WHERE v = 3"


def wait_for(predicate: object, seconds: float = 600.0) -> float:
    start = time.perf_counter()
    while not predicate():  # type: ignore[operator]
        if time.perf_counter() - start > seconds:
            raise TimeoutError("maintenance did not start")
        time.sleep(0.01)
    return time.perf_counter() - start


def reorg_landed(s: txsql.Session, version: int) -> bool:
    log = s.table("t").log
    latest = log.latest_version()
    return latest is not None and latest > version


def run(spark: Any, rows: int, fraction: float, idle: float, into: float) -> None:
    s = txsql.Session(spark, tempfile.mkdtemp(prefix="txsql-bench-maint-"))
    s.sql(f"CREATE TABLE t AS SELECT id, id % 7 AS v FROM range({rows})")
    modulus = round(1 / fraction)
    s.sql(f"DELETE FROM t WHERE id % {modulus} = 1")
    version = s.table("t").version()
    s.sql(QUERY).collect()  # warm
    peer = min(timed(s) for _ in range(3))
    # Purge time: idle, then maintenance until its REORG lands.
    s.maintenance.idle_seconds = idle
    s.maintenance.start()
    purge = wait_for(lambda: reorg_landed(s, version))
    s.maintenance.stop()
    print(
        f"{fraction:.0%} deleted: maintenance purged {rows:,} rows' DVs {purge:.1f} s after "
        f"the DELETE ({idle:g} s of it idle)"
    )
    # A statement in the middle: a fresh DELETE to purge, then start QUERY mid-step.
    s.sql(f"DELETE FROM t WHERE id % {modulus} = 2")
    version = s.table("t").version()
    s.sql(QUERY).collect()
    quiet = min(timed(s) for _ in range(3))
    s.maintenance.start()
    wait_for(lambda: s.maintenance.working)
    time.sleep(into)
    mid = timed(s)  # its start stops maintenance
    landed = s.table("t").version() > version
    s.maintenance.stop()
    s.close()
    print(
        f"  a statement {into:g} s into the step ran {mid:.3f} s vs {quiet:.3f} s without "
        f"maintenance (+{(mid - quiet) * 1000:.0f} ms); maintenance "
        f"{'committed first' if landed else 'gave up'} (peer before maintenance: {peer:.3f} s)"
    )


def timed(s: txsql.Session) -> float:
    start = time.perf_counter()
    s.sql(QUERY).collect()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--idle", type=float, default=0.5)
    parser.add_argument("--into", type=float, default=1.0)
    args = parser.parse_args()
    spark = local_session("local[2]", "txsql-bench-maintenance")
    for fraction in (0.01, 0.1):
        run(spark, args.rows, fraction, args.idle, args.into)


if __name__ == "__main__":
    main()
