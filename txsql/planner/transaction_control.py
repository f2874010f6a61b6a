"""BEGIN ... COMMIT / ROLLBACK of explicit transactions, over one table or several.

A transaction that wrote one table commits through that table's Transaction, as a
statement would. One that wrote several goes to the coordinator: each table's statements
become that table's commit (operation, parameters, summed metrics, as for a single-table
COMMIT), and the coordinator ratifies them together
(:func:`txsql.txn.transaction.commit_together`). Every statement first rolls the
warehouse's coordinator forward (:func:`roll_forward`).

Inside a transaction a failed statement aborts it (PostgreSQL's rule: only ROLLBACK runs
then), and COMMIT validates the tables it read but did not write (Serializable): inside
the coordinator's ratify loop for tables enrolled with the written ones, atomically with
the commit; just before the commit otherwise (:mod:`txsql.txn.commit.read_validation`).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from txsql.errors import TransactionAbortedError, TransactionError, TxSqlError
from txsql.planner.context import ExplicitTransaction, RunContext, StagedStatement
from txsql.planner.idempotent import StatementSkipped
from txsql.planner.sql.statements import Begin, Commit, Rollback
from txsql.result import Result
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable.coordinator import COORDINATOR_DIR, coordinator_at
from txsql.txn.multitable.publish import roll_forward as roll_forward_at
from txsql.txn.transaction import commit_together


def commit_description(
    statements: list[StagedStatement],
) -> tuple[str, dict[str, Any], dict[str, int]]:
    """The operation, parameters and summed metrics of one table's commit at COMMIT."""
    if len({s.operation for s in statements}) == 1:
        operation = statements[0].operation
        parameters = statements[0].parameters if len(statements) == 1 else {}
    else:
        operation = "TXSQL TRANSACTION"
        parameters = {"operations": json.dumps([s.operation for s in statements])}
    if len(statements) > 1:
        parameters = {**parameters, "statements": str(len(statements))}
    metrics: dict[str, int] = {}
    for s in statements:
        for key, value in s.metrics.items():
            metrics[key] = metrics.get(key, 0) + value
    return operation, parameters, metrics


def commit_tables(
    ctx: RunContext, explicit: ExplicitTransaction, text: str, reads: list[ReadCheck]
) -> Result:
    """Ratify every written table at once; the result lists each table's new version."""
    entries = []
    labels = []
    operations = []
    for root, txn in explicit.writers.items():
        statements = [s for s in explicit.statements if s.table_root == root]
        operation, parameters, metrics = commit_description(statements or explicit.statements)
        entries.append((txn, txn.commit_loop(operation, parameters, metrics)))
        labels.append(ctx.label(root))
        operations.append(operation)
    results = commit_together(entries, labels, reads=reads)
    rows = [
        {"table": label, "version": r.version, "operation": op}
        for label, r, op in zip(labels, results, operations, strict=True)
    ]
    listed = ", ".join(f"{row['table']} v{row['version']}" for row in rows)
    return Result(
        text,
        "COMMIT",
        read_version=explicit.read_version,
        message=f"committed {len(rows)} tables together: {listed}",
        df=_versions_frame(ctx, rows),
    )


def _versions_frame(ctx: RunContext, rows: list[dict[str, Any]]) -> Any:
    """The tables and their new versions as a local relation (Arrow: no Spark job)."""

    schema = pa.schema(
        [("table", pa.string()), ("version", pa.int64()), ("operation", pa.string())]
    )
    return ctx.spark.createDataFrame(
        pa.Table.from_pylist(rows, schema=schema), "table STRING, version BIGINT, operation STRING"
    )


def roll_forward(warehouse: str) -> None:
    """Publish what a crashed writer ratified in the warehouse's coordinator but did not
    publish, so that every txsql statement starts from fully published tables (one
    ``exists`` probe once the coordinator's position is known)."""
    roll_forward_at(coordinator_at(f"{warehouse.rstrip('/')}/{COORDINATOR_DIR}"))


def refuse_if_aborted(explicit: ExplicitTransaction) -> None:
    """Inside an aborted transaction only ROLLBACK runs (PostgreSQL's rule)."""
    aborted = explicit.aborted
    if isinstance(aborted, TransactionAbortedError):
        # A fresh error each time: the session locates it at the refused statement.
        raise TransactionAbortedError(
            aborted.statement_number, aborted.cause, aborted.failed_statement
        )


def abort(explicit: ExplicitTransaction | None, error: BaseException, text: str) -> None:
    """A statement inside BEGIN failed: the transaction is void until ROLLBACK.

    An exactly-once skip is not a failure, and a refused statement does not re-abort.
    """
    if explicit is None or explicit.aborted is not None:
        return
    if isinstance(error, (StatementSkipped, TransactionAbortedError)):
        return
    message = (error.message if isinstance(error, TxSqlError) else str(error)).strip()
    cause = message.splitlines()[0] if message else type(error).__name__
    explicit.aborted = TransactionAbortedError(explicit.statements_run + 1, cause, text)
    for txn in explicit.writers.values():
        txn.abort()  # drop its staged actions now: nothing can commit them


def validate_other_reads(ctx: RunContext, explicit: ExplicitTransaction) -> list[ReadCheck]:
    """Serializable across tables: the checks of each table read but not written.

    The written table is validated by its commit loop. Under Serializable (asked for with
    BEGIN ISOLATION LEVEL or the written table's ``delta.isolationLevel``) every other
    table read must be unchanged where it was read since it was pinned: the returned
    checks run inside the commit (atomically with it where the coordinator orders both
    tables). WriteSerializable validates only the written table, as Delta does; other
    tables' reads are a snapshot. A read-only transaction is validated here, when it read
    two or more tables (one consistent snapshot of a single table is always serializable).
    """
    writers = explicit.writers
    serializable = explicit.isolation is IsolationLevel.SERIALIZABLE or any(
        w.isolation_level is IsolationLevel.SERIALIZABLE for w in writers.values()
    )
    others = [r for root, r in explicit.reads.items() if root not in writers]
    if not serializable or (not writers and len(others) < 2):
        return []
    checks = [ReadCheck(reader, ctx.label(reader.table_root)) for reader in others]
    if not writers:
        for check in checks:
            check.run()
        return []
    return checks


_UNCHANGED = ("the table is unchanged", "nothing was committed")


def mention_earlier_commits(error: TxSqlError, done: list[Result]) -> None:
    """Fix a hint claiming nothing changed when earlier statements of the script committed.

    The failed statement itself changed nothing, but the script's earlier autocommitted
    statements stand; saying "the table is unchanged" there would be false.
    """
    commits = [
        f"{r.operation} {r.table or ''} v{r.version}".replace("  ", " ")
        for r in done
        if r.df is None and r.version is not None and r.operation != "SKIPPED"
    ]
    if not commits or not any(phrase in error.hint for phrase in _UNCHANGED):
        return
    shown = ", ".join(commits[:5]) + (f" and {len(commits) - 5} more" if len(commits) > 5 else "")
    instead = (
        f"this statement changed nothing, but earlier statements of the script committed "
        f"({shown}) and stand"
    )
    for phrase in _UNCHANGED:
        error.hint = error.hint.replace(phrase, instead)
    error.args = (error._render(),)


def transaction_control(ctx: RunContext, statement: Begin | Commit | Rollback, text: str) -> Result:
    """BEGIN / COMMIT / ROLLBACK on a context (the session's, or a handle's)."""
    if isinstance(statement, Begin):
        if ctx.explicit is not None:
            raise TransactionError(
                "a transaction is already open", hint="COMMIT or ROLLBACK it before BEGIN."
            )
        level = IsolationLevel.parse(statement.isolation) if statement.isolation else None
        ctx.explicit = ExplicitTransaction(level)
        return Result(text, "BEGIN", message="transaction opened")
    explicit = ctx.explicit
    if explicit is None:
        raise TransactionError(
            f"{'COMMIT' if isinstance(statement, Commit) else 'ROLLBACK'} without BEGIN",
            hint="Start a transaction with BEGIN.",
        )
    if isinstance(statement, Commit):
        refuse_if_aborted(explicit)  # the transaction stays open (aborted) until ROLLBACK
    ctx.explicit = None
    reads: list[ReadCheck] = []
    if isinstance(statement, Commit):
        try:
            reads = validate_other_reads(ctx, explicit)
        except TxSqlError:
            for writer in explicit.writers.values():
                writer.rollback()  # the COMMIT failed: nothing is written
            raise
    if isinstance(statement, Rollback) or explicit.txn is None:
        for writer in explicit.writers.values():
            writer.rollback()
        operation = "ROLLBACK" if isinstance(statement, Rollback) else "COMMIT"
        return Result(
            text, operation, read_version=explicit.read_version, message="nothing was written"
        )
    if len(explicit.writers) > 1:
        return commit_tables(ctx, explicit, text, reads)
    txn = explicit.txn
    operation, parameters, metrics = commit_description(explicit.statements)
    committed = txn.commit(operation, parameters, metrics, reads=reads)
    if committed.skipped:  # a duplicate of our (appId, version) won the race
        return Result(
            text,
            "SKIPPED",
            read_version=committed.read_version,
            metrics={"num_affected_rows": 0},
            message="skipped: this app version was already committed",
        )
    return Result(
        text,
        "COMMIT",
        version=committed.version,
        read_version=committed.read_version,
        operation_metrics=dict(committed.commit_info.operation_metrics or {}),
        message=f"committed {operation} as version {committed.version}",
    )
