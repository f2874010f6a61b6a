"""Idle maintenance of one table: the steps, each its own commit.

The steps reuse the statements' runners as plain functions (REORG ... APPLY (PURGE) and
OPTIMIZE from :mod:`txsql.planner.operations.optimize`), so the rewrite logic and the
row map that lets a racing user DML commit live in one place. The scheduler
(:mod:`txsql.maintenance`) decides when; this module decides what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from txsql.planner.context import RunContext
from txsql.planner.operations.optimize import run_optimize
from txsql.planner.sql.command_statements import OptimizeTable
from txsql.planner.sql.refs import TableRef
from txsql.result import Result

# Table property a table opts out with (``'txsql.maintenance' = 'false'``).
OPT_OUT_PROPERTY = "txsql.maintenance"


@dataclass(frozen=True, slots=True)
class Step:
    """One maintenance step: a name for the log and a function of one table."""

    name: str
    run: Callable[[RunContext, TableRef], Result | None]


def opted_out(ctx: RunContext, ref: TableRef) -> bool:
    """Whether the table says ``'txsql.maintenance' = 'false'``."""
    config = ctx.catalog.snapshot(ref).metadata.configuration
    return config.get(OPT_OUT_PROPERTY, "true").strip().lower() == "false"


def purge_deletion_vectors(ctx: RunContext, ref: TableRef) -> Result | None:
    # REORG rewrites every file that carries a DV: with the read-mix goal (<= 1.15x a
    # plain scan) even a 1% deleted fraction must be purged, so the threshold is "any".
    return run_optimize(ctx, OptimizeTable(ref, purge=True), "REORG (idle maintenance)")


def compact_small_files(ctx: RunContext, ref: TableRef) -> Result | None:
    return run_optimize(ctx, OptimizeTable(ref), "OPTIMIZE (idle maintenance)")


# The one place a step is added. HOOK: the coordinator-record compaction another
# engineer writes goes here as one more Step (after the table steps).
STEPS: tuple[Step, ...] = (
    Step("purge deletion vectors", purge_deletion_vectors),
    Step("compact small files", compact_small_files),
)
