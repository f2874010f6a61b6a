"""UPDATE: merge-on-read — old rows go into deletion vectors, new rows into new files.

The matching rows are read once, with the SET values computed by Spark on the same rows,
by ONE job (``spark_jobs`` = 1 in ``Result.metrics``): it writes the updated rows (cast to
the column types with Spark's ANSI casts, NOT NULL enforced like INSERT) and observes, on
the way, the count and the ``(_file, _row_index)`` keys of the rows it writes
(:mod:`~txsql.planner.dml.few_rows`); the driver turns the keys into DVs. Only when the
scanned files hold more rows than the driver collects are the rows persisted: should a
task match more than its share, a second job reads the very rows written (even for a
non-deterministic WHERE clause) and groups them. The scan does not apply the files' DVs
(that costs DV expansion and broadcast jobs); rows already deleted are dropped after the
WHERE clause by :func:`~txsql.planner.dml.live_rows.drop_deleted_rows`. Updating a
partition column simply writes the new rows into their new partition. Tables without DVs
get copy-on-write from the shared DV machinery."""

from __future__ import annotations

import json
import time

from pyspark import StorageLevel
from sqlglot import exp

from txsql.engine.changes import cdf_enabled
from txsql.engine.names import fresh_names
from txsql.engine.scan import resolve_path, snapshot_row_ids
from txsql.engine.schema import quote
from txsql.engine.write import in_one_task, write_data_files
from txsql.errors import TxSqlError
from txsql.log.actions import Action, AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.assignments import resolve_assignments
from txsql.planner.dml.changes import StatementChanges, update_changes
from txsql.planner.dml.column_defs import refuse_identity_updates
from txsql.planner.dml.conform import typed_columns
from txsql.planner.dml.dv_writes import DeletionOutcome, delete_found_rows, mark_rows_deleted
from txsql.planner.dml.few_rows import row_observer
from txsql.planner.dml.jobs import count_job, counting_jobs
from txsql.planner.dml.live_rows import drop_deleted_rows, without_dvs
from txsql.planner.dml.rewrite import lineage_columns
from txsql.planner.dml.target import DmlTarget, commit_dml, open_target
from txsql.planner.metrics import UpdateMetrics, elapsed_ms
from txsql.planner.sql.statements import Update
from txsql.result import Result
from txsql.storage.factory import delete_quietly
from txsql.txn.rowlevel.state import total_records

_SET = "__txsql_set_{}"  # base of the SET value columns, made fresh per statement


def run_update(ctx: RunContext, statement: Update, text: str) -> Result:
    started = time.perf_counter()
    target = open_target(ctx, statement.target, statement.alias, statement.where, "UPDATE")
    assignments = _resolve_assignments(target, statement)
    refuse_identity_updates(
        [c for c, _ in assignments], target.snapshot.schema_json, target.display
    )
    outcome = DeletionOutcome()
    changes = StatementChanges()
    adds: list[AddFile] = []
    written: list[str] = []
    scan_ms = rewrite_ms = jobs = 0

    def cleanup() -> None:
        outcome.cleanup()
        changes.cleanup()
        for path in written:
            _unlink(path)

    try:
        plan = target.plan(whole_files=False)
        if plan.scan:
            snapshot = target.snapshot
            fields = [f["name"] for f in snapshot.schema_json["fields"]]
            row_ids = snapshot_row_ids(snapshot)
            set_names = fresh_names(
                [_SET.format(i) for i in range(len(assignments))], [*fields, *row_ids]
            )
            extra = [(name, value) for name, (_, value) in zip(set_names, assignments)]
            # The scan ignores DVs (no DV expansion/anti-join jobs); rows already deleted
            # are dropped after the WHERE clause, in the same tasks.
            matched = target.matching_rows(without_dvs(plan.scan), extra, with_lineage=True)
            matched = drop_deleted_rows(matched, snapshot, plan.scan)
            # The write job observes the rows it writes (count and keys), so no second job
            # finds them again unless a task matched more than the driver may collect.
            # Only when that second job may read rows a second evaluation could change (a
            # non-deterministic WHERE) are they persisted: the write job fills the cache
            # and the DV job reads it. A repeatable WHERE is read again on the rare
            # overflow: persisting cost every big UPDATE a cache plan and build in its one
            # job (benchmarks/README.md, "UPDATE").
            observer = row_observer(ctx.spark, row_ids, plan.scan)
            kept = observer is None or (observer.may_overflow and not target.rows_repeatable())
            if kept:
                matched = matched.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                written_from = matched if observer is None else observer.observe(matched)
                # One projection picks the SET values and casts every column to its type.
                values = {column: quote(name) for name, (column, _) in zip(set_names, assignments)}
                new_rows = written_from.selectExpr(
                    *typed_columns(snapshot.schema_json, values), *_kept_ids(snapshot)
                )
                new_rows = in_one_task(new_rows, total_records(plan.scan))

                rewrite_started = time.perf_counter()
                with counting_jobs() as write_jobs:
                    adds = count_job(
                        lambda: write_data_files(
                            ctx.spark,
                            new_rows,
                            snapshot.table_root,
                            snapshot.metadata,
                            rewrite=True,
                            conformed=True,
                            protocol=snapshot.protocol,
                        )
                    )
                written = [resolve_path(snapshot.table_root, a.path) for a in adds]
                written_rows = total_records(adds)
                rewrite_ms = elapsed_ms(rewrite_started)
                scan_started = time.perf_counter()
                found = None if observer is None else observer.found()
                with counting_jobs() as dv_jobs:
                    if found is not None:
                        outcome = delete_found_rows(ctx, snapshot, found, candidates=plan.scan)
                    else:
                        outcome = mark_rows_deleted(
                            ctx,
                            snapshot,
                            matched.select(*map(quote, row_ids)),
                            candidates=plan.scan,
                            max_rows=written_rows,  # the same rows again: exactly as many
                        )
                jobs = write_jobs.jobs + dv_jobs.jobs
                scan_ms = elapsed_ms(scan_started) - outcome.rewrite_time_ms
            finally:
                if kept:
                    matched.unpersist()
            if (written_rows or 0) != outcome.num_deleted_rows:
                raise TxSqlError(
                    f"UPDATE wrote {written_rows or 0} new row(s) but replaced "
                    f"{outcome.num_deleted_rows}; nothing was committed",
                    hint="The rows changed between two reads of the same snapshot; re-run.",
                )
        assert target.txn is not None
        target.txn.record_scan(target.predicate, plan.scan, outcome.matched_rows_by_file)
        if cdf_enabled(target.snapshot) and outcome.num_deleted_rows:
            changes = update_changes(ctx, target.snapshot, outcome, adds)
        actions: list[Action] = [*outcome.actions, *adds, *changes.actions]
        target.txn.stage(actions)
    except BaseException:
        cleanup()
        raise
    metrics = UpdateMetrics(
        num_removed_files=outcome.num_removed_files,
        num_added_files=len(adds) + outcome.num_added_files,
        num_added_change_files=changes.count,
        **outcome.dv_counts(),
        num_updated_rows=outcome.num_deleted_rows,
        num_copied_rows=outcome.num_copied_rows,
        num_added_bytes=sum(a.size for a in adds) + outcome.num_added_bytes,
        num_removed_bytes=outcome.num_removed_bytes,
        execution_time_ms=elapsed_ms(started),
        scan_time_ms=scan_ms,
        rewrite_time_ms=rewrite_ms + outcome.rewrite_time_ms,
        spark_jobs=jobs,
    )
    parameters = {"predicate": json.dumps(target.condition_sql())}
    return commit_dml(target, text, "UPDATE", parameters, metrics, cleanup)


def _kept_ids(snapshot: Snapshot) -> list[str]:
    """An updated row keeps its stable row id; its commit version becomes this commit's
    (NULL: the new file's ``defaultRowCommitVersion``, assigned at commit)."""
    lineage = lineage_columns(snapshot)
    if not lineage:
        return []
    row_id, version = (quote(name) for name in lineage)
    return [row_id, f"CAST(NULL AS BIGINT) AS {version}"]


def _resolve_assignments(target: DmlTarget, statement: Update) -> list[tuple[str, exp.Expr]]:
    """The new value of each assigned column, names resolved case-insensitively; assigned
    struct fields become their column's rebuilt struct (see planner/dml/assignments)."""

    def current(column: str) -> exp.Expr:
        return exp.column(
            exp.to_identifier(column, quoted=True),
            table=exp.to_identifier(target.alias, quoted=True),
        )

    resolved = resolve_assignments(
        statement.assignments,
        target.snapshot.schema_json["fields"],
        target.qualifiers,
        current,
        f"UPDATE {target.display}",
    )
    return list(resolved.items())


def _unlink(path: str) -> None:
    delete_quietly(path)
