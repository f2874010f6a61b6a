"""PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED and SHOW TRANSACTIONS.

PREPARE TRANSACTION ends the open transaction (as COMMIT does): every table it wrote is
checked and its actions recorded durably under the id in the warehouse's coordinator
(:mod:`txsql.txn.prepared.prepare`); nothing is visible. COMMIT PREPARED and ROLLBACK PREPARED
run outside a transaction block (PostgreSQL's rule), from any process on the warehouse.
Every result lists each table with its version.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from txsql.errors import TableNotEnrolledError, TransactionError
from txsql.planner.context import ExplicitTransaction, RunContext
from txsql.planner.sql.transactions import (
    CommitPrepared,
    PrepareTransaction,
    RollbackPrepared,
    ShowTransactions,
)
from txsql.planner.transaction_control import commit_description, refuse_if_aborted
from txsql.result import Result
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable.compaction import newest_records
from txsql.txn.multitable.coordinator import (
    COORDINATOR_DIR,
    Coordinator,
    coordinator_at,
    coordinator_root,
    read_summary,
)
from txsql.txn.prepared.decide import commit_prepared, rollback_prepared
from txsql.txn.prepared.prepare import PreparedOutcome, prepare_transactions
from txsql.txn.prepared.records import (
    ROLLBACK,
    undecided,
)


def warehouse_coordinator(ctx: RunContext) -> Coordinator:
    return coordinator_at(f"{ctx.catalog.warehouse.rstrip('/')}/{COORDINATOR_DIR}")


def prepare_transaction(ctx: RunContext, statement: PrepareTransaction, text: str) -> Result:
    """``PREPARE TRANSACTION 'id'``: the open transaction becomes a prepared one."""
    explicit = ctx.explicit
    if explicit is None:
        raise TransactionError(
            "PREPARE TRANSACTION without BEGIN",
            hint="BEGIN, write the tables, then PREPARE TRANSACTION 'id'.",
        )
    refuse_if_aborted(explicit)  # the transaction stays open (aborted) until ROLLBACK
    ctx.explicit = None
    try:
        outcome = _prepare(ctx, explicit, statement.transaction_id)
    except BaseException:
        for writer in explicit.writers.values():
            if writer.state == "open":
                writer.rollback()  # PREPARE failed: the transaction is over, nothing kept
        raise
    return _outcome_result(ctx, text, "PREPARE TRANSACTION", outcome)


def _prepare(ctx: RunContext, explicit: ExplicitTransaction, prepared_id: str) -> PreparedOutcome:
    if not explicit.writers:
        raise TransactionError(
            f"PREPARE TRANSACTION {prepared_id!r}: the transaction wrote nothing, so there is "
            f"nothing to prepare",
            hint="ROLLBACK it; prepare only transactions that write (a sink with an empty "
            "epoch has nothing to commit).",
        )
    _refuse_unchecked_reads(explicit, prepared_id)
    labels = [ctx.label(root) for root in explicit.writers]
    not_enrolled = tuple(
        label for label, txn in zip(labels, explicit.writers.values()) if not txn.enrolled
    )
    if not_enrolled:
        error = TableNotEnrolledError(not_enrolled)
        error.message = (
            "PREPARE TRANSACTION needs every table it writes enrolled in multi-table "
            f"transactions; {', '.join(not_enrolled)} "
            f"{'is' if len(not_enrolled) == 1 else 'are'} not"
        )
        error.args = (error._render(),)
        raise error
    home = warehouse_coordinator(ctx).root
    for label, txn in zip(labels, explicit.writers.values()):
        snapshot = txn.snapshot()
        conf = snapshot.configuration if snapshot else {}
        if coordinator_at(coordinator_root(txn.table_root, conf)).root != home:
            raise TransactionError(
                f"PREPARE TRANSACTION: {label} commits through another coordinator than the "
                f"warehouse's ({home}), where COMMIT PREPARED looks for prepared transactions",
                hint="Prepare transactions over tables of the session's warehouse (or open "
                "the Session on the warehouse of those tables).",
            )
    entries = []
    for root, txn in explicit.writers.items():
        statements = [s for s in explicit.statements if s.table_root == root]
        operation, parameters, metrics = commit_description(statements or explicit.statements)
        entries.append((txn, txn.commit_loop(operation, parameters, metrics)))
    return prepare_transactions(entries, labels, prepared_id)


def _refuse_unchecked_reads(explicit: ExplicitTransaction, prepared_id: str) -> None:
    """Serializable validates tables read but not written at COMMIT; a prepared
    transaction could not re-validate them at COMMIT PREPARED, so it is refused."""
    writers = explicit.writers
    serializable = explicit.isolation is IsolationLevel.SERIALIZABLE or any(
        w.isolation_level is IsolationLevel.SERIALIZABLE for w in writers.values()
    )
    others = [root for root in explicit.reads if root not in writers]
    if serializable and others:
        raise TransactionError(
            f"PREPARE TRANSACTION {prepared_id!r}: under Serializable this transaction's "
            f"reads of tables it does not write ({', '.join(others)}) would need checking at "
            f"COMMIT PREPARED, which a prepared transaction cannot do",
            hint="ROLLBACK, then run it under WriteSerializable or COMMIT it directly.",
        )


def _outside_transaction(ctx: RunContext, what: str) -> None:
    if ctx.explicit is not None:
        raise TransactionError(
            f"{what} cannot run inside a transaction block",
            hint="COMMIT or ROLLBACK the open transaction first (PostgreSQL's rule).",
        )


def run_commit_prepared(ctx: RunContext, statement: CommitPrepared, text: str) -> Result:
    _outside_transaction(ctx, "COMMIT PREPARED")
    outcome = commit_prepared(
        warehouse_coordinator(ctx), statement.transaction_id, ctx.max_commit_attempts
    )
    return _outcome_result(ctx, text, "COMMIT PREPARED", outcome)


def run_rollback_prepared(ctx: RunContext, statement: RollbackPrepared, text: str) -> Result:
    _outside_transaction(ctx, "ROLLBACK PREPARED")
    outcome = rollback_prepared(warehouse_coordinator(ctx), statement.transaction_id)
    return _outcome_result(ctx, text, "ROLLBACK PREPARED", outcome)


_OUTCOME_SCHEMA = "transaction_id STRING, state STRING, table STRING, version BIGINT"


def _outcome_result(ctx: RunContext, text: str, operation: str, outcome: PreparedOutcome) -> Result:
    rows = [
        {"transaction_id": outcome.transaction_id, "state": outcome.state, "table": t, "version": v}
        for t, v in outcome.versions
    ]
    return Result(text, operation, message=outcome.message, df=_frame(ctx, rows, _OUTCOME_SCHEMA))


_SHOW_SCHEMA = (
    "transaction_id STRING, state STRING, position BIGINT, time TIMESTAMP, table STRING, "
    "version BIGINT"
)


def run_show_transactions(ctx: RunContext, statement: ShowTransactions, text: str) -> Result:
    """The newest groups of the warehouse's coordinator, newest first, one row per
    participant (a rolled-back prepared transaction has one row without a table), then
    every prepared transaction still undecided (state ``prepared``, no position; the
    version each table would become if it were committed now)."""
    coordinator = warehouse_coordinator(ctx)
    groups = newest_records(coordinator, statement.limit)
    rows: list[dict[str, Any]] = []
    for group in groups:
        state = "rolled back" if group.prepared_outcome == ROLLBACK else "committed"
        base = {
            "transaction_id": group.transaction_id,
            "state": state,
            "position": group.position,
            "time": _timestamp(group.timestamp),
        }
        if not group.participants:
            rows.append({**base, "table": None, "version": None})
        for p in group.participants:
            rows.append({**base, "table": ctx.label(p.table_root), "version": p.version})
    summary = read_summary(coordinator)
    if summary.compacted and len(groups) < statement.limit:
        # Compacted groups keep no names (their commits keep them, in each table's log):
        # one row stands for them all, at the newest compacted position and time.
        rows.append(
            {
                "transaction_id": f"({summary.compacted} compacted)",
                "state": "compacted",
                "position": summary.lowest_live - 1,
                "time": _timestamp(summary.newest_compacted_ms),
                "table": None,
                "version": None,
            }
        )
    for record in undecided(coordinator):
        for part in record.participants:
            rows.append(
                {
                    "transaction_id": record.transaction_id,
                    "state": "prepared",
                    "position": None,
                    "time": _timestamp(record.timestamp),
                    "table": part.label,
                    "version": part.version,
                }
            )
    return Result(text, "SHOW TRANSACTIONS", df=_frame(ctx, rows, _SHOW_SCHEMA))


def _timestamp(ms: int) -> Any:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _frame(ctx: RunContext, rows: list[dict[str, Any]], schema: str) -> Any:
    """Rows as a local relation (no Spark job to build it)."""
    columns = [part.strip().split(" ")[0] for part in schema.split(",")]
    return ctx.spark.createDataFrame([tuple(r[c] for c in columns) for r in rows], schema)
