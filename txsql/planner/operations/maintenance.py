"""Idle maintenance of one table: the steps, each its own commit (or none).

The data steps reuse the statements' runners as plain functions (REORG ... APPLY (PURGE)
and OPTIMIZE from :mod:`txsql.planner.operations.optimize`), so the rewrite logic and the
row map that lets a racing DML commit live in one place. The scheduler
(:mod:`txsql.maintenance`) decides when; this module decides what.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from txsql.log import properties
from txsql.log.segment import read_last_checkpoint
from txsql.planner.context import RunContext
from txsql.planner.operations.optimize import run_optimize
from txsql.planner.sql.command_statements import OptimizeTable
from txsql.planner.sql.refs import TableRef
from txsql.txn.multitable.compaction import compact_coordinator, retention_ms
from txsql.txn.multitable.coordinator import coordinator_for, now_ms
from txsql.txn.prepared.records import undecided

logger = logging.getLogger("txsql.maintenance")

# Table properties: a table opts out with 'txsql.maintenance' = 'false'; files at least
# 'txsql.maintenance.purgeThreshold' deleted (a fraction, 0 to 1) have their DVs purged.
OPT_OUT_PROPERTY = "txsql.maintenance"
THRESHOLD_PROPERTY = "txsql.maintenance.purgeThreshold"
# Any deleted row: benchmarks/scan.py measured reads of a 5M-row table 2-3x a plain scan at
# 1 % deleted and 1.02x once purged, so even 1 % is worth purging while the user thinks.
DEFAULT_THRESHOLD = 0.0


@dataclass(frozen=True, slots=True)
class Step:
    """One maintenance step: a name for the log and a function of one table."""

    name: str
    run: Callable[[RunContext, TableRef], object]


def skip_reason(ctx: RunContext, ref: TableRef) -> str | None:
    """Why maintenance leaves the table alone this time, or None: the table opted out
    (``'txsql.maintenance' = 'false'``) or an undecided PREPARE wrote it."""
    config = ctx.catalog.snapshot(ref).metadata.configuration
    if config.get(OPT_OUT_PROPERTY, "true").strip().lower() == "false":
        return "opted out"
    if in_prepared_transaction(ctx, ref):
        return "a prepared transaction wrote it"
    return None


def purge_threshold(configuration: Mapping[str, str]) -> float:
    """The table's purge threshold; an unreadable value is logged and the default used
    (maintenance never fails a table over its own setting)."""
    text = configuration.get(THRESHOLD_PROPERTY)
    if text is None:
        return DEFAULT_THRESHOLD
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        logger.warning("%s = %r is not a fraction from 0 to 1: using 0", THRESHOLD_PROPERTY, text)
        return DEFAULT_THRESHOLD
    return value


def in_prepared_transaction(ctx: RunContext, ref: TableRef) -> bool:
    """Whether an undecided PREPARE TRANSACTION wrote the table: a rewrite now would make
    its COMMIT PREPARED conflict, so maintenance leaves the table alone until it is decided."""
    snapshot = ctx.catalog.snapshot(ref)
    coordinator = coordinator_for(snapshot.table_root, snapshot.configuration)
    if coordinator is None:
        return False
    root = snapshot.table_root.rstrip("/")
    return any(
        p.table_root.rstrip("/") == root for r in undecided(coordinator) for p in r.participants
    )


def purge_deletion_vectors(ctx: RunContext, ref: TableRef) -> object:
    threshold = purge_threshold(ctx.catalog.snapshot(ref).configuration)
    statement = OptimizeTable(ref, purge=True, purge_threshold=threshold)
    return run_optimize(ctx, statement, "REORG (idle maintenance)")


def compact_small_files(ctx: RunContext, ref: TableRef) -> object:
    return run_optimize(ctx, OptimizeTable(ref), "OPTIMIZE (idle maintenance)")


def checkpoint_if_due(ctx: RunContext, ref: TableRef) -> object:
    """A checkpoint of the newest version when the commits since the last one reach the
    table's interval. txsql's own commits write theirs inline; this catches the ones a
    failed checkpoint or another writer (deltalake writes none by default) left out."""
    log = ctx.catalog.existing_log(ref)
    snapshot = log.snapshot()
    interval = properties.checkpoint_interval(snapshot.configuration)
    last = read_last_checkpoint(log.store)
    since = snapshot.version - (int(last["version"]) if last else -1)
    if interval <= 0 or since < interval:
        return f"no checkpoint due ({since} commits since the last)"
    log.checkpoint(snapshot)
    return f"checkpoint at version {snapshot.version}"


def compact_coordinator_records(ctx: RunContext, ref: TableRef) -> object:
    """Coordinator records past their retention (see txsql.txn.multitable.compaction)."""
    snapshot = ctx.catalog.snapshot(ref)
    coordinator = coordinator_for(snapshot.table_root, snapshot.configuration)
    if coordinator is None:
        return "not enrolled"
    return compact_coordinator(coordinator, now_ms(), retention_ms([snapshot.configuration]))


# The steps, in order, each on one table at a time.
STEPS: tuple[Step, ...] = (
    Step("purge deletion vectors", purge_deletion_vectors),
    Step("compact small files", compact_small_files),
    Step("checkpoint", checkpoint_if_due),
    Step("compact coordinator records", compact_coordinator_records),
)
