"""The demo behind ``txsql demo``: create, insert, time travel, history, a lost race."""

from __future__ import annotations

import tempfile

from txsql.errors import CommitConflictError


def run_demo(warehouse: str | None = None) -> None:
    from txsql.session import Session

    directory = warehouse or tempfile.mkdtemp(prefix="txsql-demo-")
    print(f"txsql demo: warehouse {directory}\n")
    s = Session(warehouse=directory)

    def show(sql: str) -> None:
        print(f"txsql> {sql}")
        result = s.sql(sql)
        if result.df is not None:
            result.df.show(truncate=False)
        else:
            print(f"  ✔ {result.operation} committed version {result.version} {result.metrics}\n")

    show("CREATE TABLE trips (id BIGINT NOT NULL, city STRING, km DOUBLE) PARTITIONED BY (city)")
    show("INSERT INTO trips VALUES (1, 'Oslo', 12.5), (2, 'Lima', 3.0), (3, 'Oslo', 7.25)")
    show("INSERT INTO trips SELECT id + 10, city, km * 2 FROM trips")
    show("SELECT city, count(*) AS trips, sum(km) AS km FROM trips GROUP BY city ORDER BY city")
    show("SELECT * FROM trips VERSION AS OF 1 ORDER BY id")
    show("DESCRIBE HISTORY trips")

    print("A race: two writers both try to create the same table as version 0.")
    from txsql.log.deltalog import DeltaLog
    from txsql.planner.statements import TableRef
    from txsql.txn.transaction import Transaction

    location = s.catalog.location(TableRef(name="race"))
    first = Transaction(DeltaLog.for_path(location))
    second = Transaction(DeltaLog.for_path(location))
    first.snapshot(), second.snapshot()  # both read "no table yet"
    s.sql("CREATE TABLE race (id INT)")  # someone else wins version 0 meanwhile
    protocol, metadata = DeltaLog.for_path(location).snapshot().protocol, None
    try:
        from txsql.log.actions import Metadata

        metadata = Metadata(id="demo", schema_string='{"type":"struct","fields":[]}')
        second.stage([protocol, metadata])
        second.commit("CREATE TABLE")
    except CommitConflictError as e:
        print(f"  ✘ the late writer lost: {type(e).__name__}: {e.message}\n")
    first.rollback()
    print("Done.")
