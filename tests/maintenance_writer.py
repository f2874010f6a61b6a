"""A process for the kill -9 test: a session with idle maintenance on deletes rows of a
big table, prints ``deleted``, then idles while maintenance rewrites the table.

Run as ``python -m tests.maintenance_writer WAREHOUSE``.
"""

from __future__ import annotations

import sys
import time

import txsql
from txsql.engine.spark import local_session

ROWS = 2_000_000


def main() -> None:
    spark = local_session("local[2]", "txsql-maintenance-writer")
    s = txsql.Session(spark, sys.argv[1], maintenance=True, maintenance_idle_seconds=0.1)
    s.sql(f"CREATE TABLE t AS SELECT id, id % 7 AS v FROM range({ROWS})")
    s.sql("DELETE FROM t WHERE id % 10 = 3")
    print("deleted", flush=True)
    time.sleep(600)  # killed long before


if __name__ == "__main__":
    main()
