"""The demo behind ``txsql demo``: create, insert, time travel, history and a conflict."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

from txsql.engine.spark import local_spark
from txsql.errors import CommitConflictError
from txsql.session import Session

if TYPE_CHECKING:
    from txsql.session import Session


def run_demo(warehouse: str | None = None) -> None:
    directory = warehouse or tempfile.mkdtemp(prefix="txsql-demo-")
    print(f"txsql demo — warehouse {directory}")
    spark = local_spark()  # quiet: Spark's own output goes to the log file it names
    print()
    s = Session(spark, warehouse=directory)
    run(s, "CREATE TABLE trips (id BIGINT NOT NULL, city STRING, km DOUBLE) PARTITIONED BY (city)")
    run(s, "INSERT INTO trips VALUES (1, 'Oslo', 12.5), (2, 'Lima', 3.0), (3, 'Oslo', 7.25)")
    run(s, "INSERT INTO trips SELECT id + 10, city, km * 2 FROM trips")
    run(s, "SELECT city, count(*) AS trips, sum(km) AS km FROM trips GROUP BY city ORDER BY city")
    run(s, "SELECT * FROM trips VERSION AS OF 1 ORDER BY id")
    run(s, "DESCRIBE HISTORY trips")
    race(s, "Serializable")
    race(s, "WriteSerializable")
    print("Done. Every version above is a Delta commit in", s.table("trips").location)


def run(s: Session, sql: str) -> None:
    print(f"txsql> {sql}")
    result = s.sql(sql)
    if result.df is not None:
        df = result.df
        if result.operation == "DESCRIBE HISTORY":
            df = df.select(
                "version",
                "operation",
                "readVersion",
                "isolationLevel",
                "isBlindAppend",
                "operationMetrics",
            )
        df.show(truncate=False)
    else:
        print(f"  ✔ {result.operation}: version {result.version} {result.metrics}\n")


def race(s: Session, isolation: str) -> None:
    """A reader-writer transaction races a blind INSERT: the isolation level decides."""
    print(
        f"Race under {isolation}: T1 reads trips and inserts a summary row; "
        "T2 inserts a trip and commits first."
    )
    t1 = s.begin(isolation)
    t1.sql("SELECT count(*) FROM trips")
    t1.sql("INSERT INTO trips SELECT max(id) + 100, 'Summary', sum(km) FROM trips")
    won = s.sql("INSERT INTO trips VALUES (50, 'Lima', 1.0)")
    print(f"  T2 ✔ committed version {won.version}")
    try:
        committed = t1.commit()
        print(
            f"  T1 ✔ committed version {committed.version} after rebasing onto the winner "
            "(a blind insert cannot change what T1 read under WriteSerializable)\n"
        )
    except CommitConflictError as e:
        print(f"  T1 ✘ {type(e).__name__}: {e.message}")
        print(
            f"     rule: {e.rule}; winner: version {e.winning_version} "
            f"({e.winning_operation}); isolation: {e.isolation_level}\n"
        )
