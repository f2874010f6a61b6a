"""What row tracking costs a write: the same statements on the same rows, in one run, on a
table that lists the rowTracking feature (every commit hands out row ids and moves the
high-water mark) and on one that does not (the peer).

    python benchmarks/row_tracking.py --rows 1000000 --repeat 3

Prints the median time per statement on each table and the ratio. ``delta.enableRowTracking``
itself is not measured: txsql refuses the statements that would have to keep stable ids.
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
        "MERGE 1k rows",
        "MERGE INTO {t} t USING (SELECT id * 997 AS id FROM range(1000)) src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET s = 'merged' "
        "WHEN NOT MATCHED THEN INSERT (id, k, s) VALUES (src.id, -1, 'inserted')",
    ),
]


def build(s: Session, name: str, rows: int, tracked: bool) -> str:
    props = " TBLPROPERTIES ('delta.feature.rowTracking' = 'supported')" if tracked else ""
    s.sql(f"CREATE TABLE {name} (id BIGINT, k INT, s STRING){props}")
    s.sql(f"INSERT INTO {name} SELECT id, CAST(id % 100 AS INT), 'row' FROM range({rows})")
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    s = Session(warehouse=tempfile.mkdtemp(prefix="txsql-bench-rt-"))
    print(f"row tracking cost: {args.rows:,} rows, {args.repeat} runs per statement and table")
    for label, sql in STATEMENTS:
        times: dict[bool, list[float]] = {True: [], False: []}
        for run in range(args.repeat + 1):  # the first run of each pair warms up
            for tracked in (False, True):
                name = build(s, f"t_{int(tracked)}_{run}_{len(times[tracked])}", args.rows, tracked)
                started = time.perf_counter()
                s.sql(sql.format(t=name, n=args.rows))
                if run:
                    times[tracked].append(time.perf_counter() - started)
                s.sql(f"DROP TABLE {name}")
        plain, tracked_s = statistics.median(times[False]), statistics.median(times[True])
        print(
            f"{label:15s} plain {plain:6.3f} s  rowTracking {tracked_s:6.3f} s  "
            f"ratio {tracked_s / plain:.2f}x"
        )


if __name__ == "__main__":
    main()
