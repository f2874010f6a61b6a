"""TRUNCATE TABLE: one commit that removes every file (Delta's "TRUNCATE" operation).

The history stays: time travel to the versions before still reads the rows, until VACUUM
deletes the removed files. The commit reads the whole table (every file is removed), so
under Serializable a concurrent append conflicts; under WriteSerializable it does not (the
append then counts as after the truncate, a valid serial order).
"""

from __future__ import annotations

import time

from txsql.errors import TransactionError
from txsql.planner.context import RunContext
from txsql.planner.metrics import TruncateMetrics, elapsed_ms
from txsql.planner.sql.ddl_statements import TruncateTable
from txsql.result import Result


def run_truncate(ctx: RunContext, statement: TruncateTable, text: str) -> Result:
    started = time.perf_counter()
    log = ctx.catalog.existing_log(statement.target)
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    if snapshot is None:
        raise TransactionError(f"table {statement.target.display} has no committed version yet")
    txn.mark_read_whole_table()
    now = int(time.time() * 1000)
    removes = [f.to_remove(timestamp=now) for f in snapshot.files]
    txn.stage(removes)
    metrics = TruncateMetrics(len(removes), elapsed_ms(started))
    committed = ctx.commit(txn, "TRUNCATE", {}, metrics.delta())
    return Result(
        text,
        "TRUNCATE",
        version=committed.version if committed else None,
        read_version=txn.read_version,
        table=statement.target.display,
        metrics=metrics.shown(),
        operation_metrics={k: str(v) for k, v in metrics.delta().items()},
    )
