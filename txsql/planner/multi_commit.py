"""COMMIT of a transaction that wrote several tables, and roll forward before statements.

The session's COMMIT comes here when BEGIN ... COMMIT wrote more than one table: each
table's statements become that table's commit (operation, parameters, summed metrics, as
for a single-table COMMIT), and the coordinator ratifies them together
(:func:`txsql.txn.transaction.commit_together`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from txsql.result import Result
from txsql.txn.coordinator import COORDINATOR_DIR, coordinator_at
from txsql.txn.coordinator import roll_forward as roll_forward_at
from txsql.txn.transaction import commit_together

if TYPE_CHECKING:
    from txsql.planner.context import ExplicitTransaction, RunContext, StagedStatement


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


def commit_tables(ctx: RunContext, explicit: ExplicitTransaction, text: str) -> Result:
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
    results = commit_together(entries, labels)
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
    import pyarrow as pa

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
