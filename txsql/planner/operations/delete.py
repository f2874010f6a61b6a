"""DELETE FROM: merge-on-read with deletion vectors, metadata-only for whole files.

Flow: the WHERE clause becomes a predicate; files are pruned by partition values and
stats; files a partition-only predicate covers entirely are removed without reading them
(Delta's metadata-only delete); the rest are scanned with row ids, Spark filters them by
the WHERE clause, and the matching rows become DVs (or the files are rewritten when the
table has no DVs). One Spark job finds them: collected as Arrow while they are few
(:func:`~txsql.planner.dml.few_rows.collect_found_rows`, no Python stage, so a point
DELETE costs the same on any file size), else grouped per file on the executors by
:func:`~txsql.planner.dml.dv_writes.mark_rows_deleted`. Delta commits a DELETE even when
nothing matched, and so do we.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from pyroaring import BitMap64

from txsql.engine.changes import cdf_enabled
from txsql.engine.scan import snapshot_row_ids
from txsql.log.actions import Action, AddFile
from txsql.planner.context import RunContext
from txsql.planner.dml.changes import StatementChanges, delete_changes
from txsql.planner.dml.dv_writes import DeletionOutcome, delete_found_rows, mark_rows_deleted
from txsql.planner.dml.few_rows import collect_found_rows
from txsql.planner.dml.jobs import JobCounter, counting_jobs
from txsql.planner.dml.live_rows import without_dvs
from txsql.planner.dml.target import DmlTarget, commit_dml, open_target
from txsql.planner.metrics import DeleteMetrics, elapsed_ms
from txsql.planner.sql.statements import Delete
from txsql.result import Result
from txsql.txn.rowlevel.state import num_records


def run_delete(ctx: RunContext, statement: Delete, text: str) -> Result:
    started = time.perf_counter()
    target = open_target(ctx, statement.target, statement.alias, statement.where, "DELETE")
    outcome = DeletionOutcome()
    changes = StatementChanges()
    jobs = JobCounter()

    def cleanup() -> None:
        outcome.cleanup()
        changes.cleanup()

    try:
        plan = target.plan(whole_files=True)
        scan_ms = 0
        if plan.scan:
            scan_started = time.perf_counter()
            # Scan without applying the files' DVs: mark_rows_deleted drops rows already
            # deleted from its bitmaps anyway, and the scan then needs no DV expansion or
            # anti-join (two to four Spark jobs less).
            snapshot = target.snapshot
            with counting_jobs() as jobs:
                matched = target.matching_rows(without_dvs(plan.scan))
                row_ids = snapshot_row_ids(snapshot)
                found = collect_found_rows(ctx.spark, matched, row_ids, plan.scan)
                if found is None:  # too many rows to collect: grouped on the executors
                    outcome = mark_rows_deleted(ctx, snapshot, matched, candidates=plan.scan)
                else:
                    outcome = delete_found_rows(ctx, snapshot, found, candidates=plan.scan)
            scan_ms = elapsed_ms(scan_started) - outcome.rewrite_time_ms
        whole_rows = _live_rows(plan.whole)
        actions: list[Action] = list(outcome.actions)
        for f in plan.whole:
            actions.append(f.to_remove())
            outcome.num_removed_files += 1
            outcome.num_removed_bytes += f.size
            if f.deletion_vector is not None:
                outcome.num_dvs_removed += 1
        _record_reads(target, plan.scan, plan.whole, outcome.matched_rows_by_file)
        if cdf_enabled(target.snapshot):
            changes = delete_changes(ctx, target.snapshot, outcome, plan.whole)
            actions += changes.actions
        assert target.txn is not None
        target.txn.stage(actions)
    except BaseException:
        cleanup()
        raise
    deleted = None if whole_rows is None else outcome.num_deleted_rows + whole_rows
    # Delta's metadata-only delete reports no copy/add counters, and the deleted row count
    # only when every removed file has stats.
    metadata_only = not plan.scan and bool(plan.whole)
    metrics = DeleteMetrics(
        num_removed_files=outcome.num_removed_files,
        num_added_files=None if metadata_only else outcome.num_added_files,
        num_added_change_files=changes.count,
        **outcome.dv_counts(),
        num_deleted_rows=None if metadata_only and deleted is None else deleted or 0,
        num_copied_rows=None if metadata_only else outcome.num_copied_rows,
        num_removed_bytes=outcome.num_removed_bytes,
        num_added_bytes=outcome.num_added_bytes,
        execution_time_ms=elapsed_ms(started),
        scan_time_ms=scan_ms,
        rewrite_time_ms=outcome.rewrite_time_ms,
        affected_rows=-1 if deleted is None else deleted,
        spark_jobs=jobs.jobs,
    )
    parameters = {"predicate": json.dumps(target.condition_sql())}
    return commit_dml(target, text, "DELETE", parameters, metrics, cleanup)


def _record_reads(
    target: DmlTarget,
    scanned: Sequence[AddFile],
    whole: Sequence[AddFile],
    matched: Mapping[str, BitMap64],
) -> None:
    """Record the read set: scanned files row by row, whole files as all their rows."""
    assert target.txn is not None
    rows = dict(matched)
    unknown: list[AddFile] = []
    for f in whole:
        total = num_records(f.stats)
        if total is None:
            unknown.append(f)
            continue
        everything = BitMap64()
        everything.add_range(0, total)
        rows[f.path] = everything
    known = [f for f in whole if f not in unknown]
    target.txn.record_scan(target.predicate, [*scanned, *known], rows)
    if unknown:
        target.txn.record_scan(target.predicate, unknown, None)


def _live_rows(files: Sequence[AddFile]) -> int | None:
    """Logical rows of ``files`` from stats, or None if some file lacks ``numRecords``."""
    total = 0
    for f in files:
        n = num_records(f.stats)
        if n is None:
            return None
        total += n - (f.deletion_vector.cardinality if f.deletion_vector else 0)
    return total
