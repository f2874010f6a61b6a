"""What row tracking costs a write: the same statements on the same rows, in one run, on
three tables built alike: one without row tracking (the peer), one listing the rowTracking
feature (every commit hands out fresh row ids and moves the high-water mark), and one with
``delta.enableRowTracking = true`` (stable ids: UPDATE, MERGE and OPTIMIZE read each row's
id and write it into the materialized columns).

    python benchmarks/row_tracking.py --rows 1000000 --repeat 6 [--only MERGE]

The statements are those of ``benchmarks/dml.py`` (UPDATE of 1 % of the rows, a MERGE of
rows/50 source rows half matching), plus a DELETE of 1 % and an OPTIMIZE after a DELETE.
Each run builds the three tables and times the statement on each, starting with a
different table each run. Prints the median time per statement on each table and the
ratio to the peer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from txsql import Session

STATEMENTS = [
    ("INSERT 1k rows", "INSERT INTO {t} SELECT id + {n}, id % 100, 'new' FROM range(1000)"),
    ("UPDATE 1 %", "UPDATE {t} SET s = 'upd' WHERE k = 7"),
    ("DELETE 1 %", "DELETE FROM {t} WHERE k = 8"),
    (
        "MERGE rows/50",
        # Half the source rows match ids spread over the table, half are new.
        "MERGE INTO {t} t USING (SELECT CASE WHEN id % 2 = 0 THEN id * 50 ELSE {n} + id END "
        "AS id FROM range({n} / 50)) src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET s = 'merged' "
        "WHEN NOT MATCHED THEN INSERT (id, k, s) VALUES (src.id, -1, 'inserted')",
    ),
    ("OPTIMIZE", "OPTIMIZE {t}"),
]
TABLES = {
    "plain": "",
    "ids": " TBLPROPERTIES ('delta.feature.rowTracking' = 'supported')",
    "stable ids": " TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
}


def build(s: Session, name: str, rows: int, kind: str, label: str) -> str:
    s.sql(f"CREATE TABLE {name} (id BIGINT, k INT, s STRING){TABLES[kind]}")
    s.sql(f"INSERT INTO {name} SELECT id, CAST(id % 100 AS INT), 'row' FROM range({rows})")
    if label == "OPTIMIZE":  # files with deletion vectors and small files to compact
        s.sql(f"DELETE FROM {name} WHERE k = 9")
        s.sql(f"INSERT INTO {name} SELECT id + {rows}, 1, 'small' FROM range(100)")
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--only", default="", help="run the statements whose label starts so")
    args = parser.parse_args()
    s = Session(warehouse=tempfile.mkdtemp(prefix="txsql-bench-rt-"))
    print(f"row tracking cost: {args.rows:,} rows, {args.repeat} runs per statement and table")
    for label, sql in STATEMENTS:
        if not label.startswith(args.only):
            continue
        times: dict[str, list[float]] = {kind: [] for kind in TABLES}
        kinds = list(TABLES)
        for run in range(args.repeat + 1):  # the first run of each round warms up
            # A different table first each run: the first of a round measured slower (JIT,
            # GC after the builds), which read as a cost of row tracking when plain led.
            for kind in kinds[run % 3 :] + kinds[: run % 3]:
                name = f"t_{len(times[kind])}_{run}_{list(TABLES).index(kind)}"
                build(s, name, args.rows, kind, label)
                started = time.perf_counter()
                s.sql(sql.format(t=name, n=args.rows))
                if run:
                    times[kind].append(time.perf_counter() - started)
                s.sql(f"DROP TABLE {name}")
        medians = {kind: statistics.median(t) for kind, t in times.items()}
        plain = medians["plain"]
        tracked = [(kind, m) for kind, m in medians.items() if kind != "plain"]
        shown = "  ".join(f"{kind} {m:6.3f} s ({m / plain:.2f}x)" for kind, m in tracked)
        print(f"{label:15s} plain {plain:6.3f} s  {shown}")


if __name__ == "__main__":
    main()
