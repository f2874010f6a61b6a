"""MERGE INTO as DataFrame rewrites: merge-on-read with deletion vectors.

How a MERGE runs (Delta's semantics; Spark evaluates every expression):

1. The source is a query (table, view, subquery) Spark plans lazily.
2. The target is scanned with row ids. When no NOT MATCHED BY SOURCE clause needs the
   unmatched target rows, files are pruned by the ON conjuncts on target columns alone
   (rows failing them cannot match anything).
3. The source is persisted and materialized by one job (which also counts it and keeps
   the conflict check's copy of its ON columns), so Spark plans the join knowing its
   real size; a source small next to the target is broadcast (by a hint where Spark's
   threshold would not): the target is streamed, never shuffled.
   Target joins source; each row gets the first clause of its kind whose condition holds
   and, for UPDATE/INSERT, its new values (:mod:`txsql.planner.operations.merge.execute`). With NOT
   MATCHED clauses and a small source the join is split (target x broadcast source, then
   the source rows whose ids did not match). The classified rows are persisted and
   everything below reads them, so a non-deterministic source or condition is evaluated
   once.
4. Job 2 writes the new rows (updated and inserted) first, so a NOT NULL or cast failure
   stops the MERGE before any DV is written; it also counts the rows per clause (observed
   metrics, no job of its own). Job 3 summarizes the target rows: Delta's cardinality
   check and per-file bitmaps of matched and changed rows, collected as (file CRC, row
   index, clause) when few, else grouped by Spark. The old versions of updated and
   deleted rows go into DVs built from those bitmaps on the driver (no further job;
   copy-on-write on tables without DVs adds a rewrite). ``spark_jobs`` in Result.metrics
   counts them.
5. The read set: the target rows joining the source (ON, a copy of the source's ON
   columns, files read, rows matched; :mod:`txsql.planner.operations.merge.check`), so concurrent
   commits conflict only when their rows could join with this source; then one ``MERGE``
   commit with Delta's operationParameters and operationMetrics.

From the Python API, merge a pandas or Spark DataFrame by registering it as a view first::

    spark.createDataFrame(pdf).createOrReplaceTempView("src")
    s.sql("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET *")
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from txsql.engine.changes import cdf_enabled
from txsql.engine.file_constants import stable_row_id_sql
from txsql.engine.spark_types import spark_schema
from txsql.engine.write import write_data_files
from txsql.errors import SqlError
from txsql.log import features, protocol_upgrade
from txsql.log.actions import AddFile
from txsql.planner.context import RunContext
from txsql.planner.dml.changes import StatementChanges
from txsql.planner.dml.column_defs import merge_with_defaults
from txsql.planner.dml.conform import ansi_off, conform_to_schema, fit_checked
from txsql.planner.dml.dv_writes import DeletionOutcome, delete_found_rows
from txsql.planner.dml.jobs import count_job, counting_jobs
from txsql.planner.dml.live_rows import without_dvs
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.dml.rewrite import commit_result, lineage_columns, scan_files
from txsql.planner.metrics import MergeMetrics, elapsed_ms
from txsql.planner.operations.merge import execute as mx
from txsql.planner.operations.merge.changes import merge_changes
from txsql.planner.operations.merge.check import (
    SourceRows,
    capture_source,
    record_merge_read,
    target_predicate,
)
from txsql.planner.operations.merge.evolve import evolution_enabled, evolved_metadata
from txsql.planner.operations.merge.live import drop_deleted_joined
from txsql.planner.operations.merge.plan import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    MergePlan,
    inserts_deterministic,
    operation_parameters,
    plan_merge,
)
from txsql.planner.operations.merge.small_target import run_small_target, small_target
from txsql.planner.operations.merge.summary import (
    Summary,
    check_cardinality,
    check_consistent,
    observe_counts,
    summarize,
)
from txsql.planner.operations.widening import (
    candidates,
    explained_overflow,
    merge_sources,
    widen_columns,
)
from txsql.planner.sql.predicates import prune_files
from txsql.planner.sql.statements import Merge
from txsql.result import Result
from txsql.storage.factory import delete_quietly
from txsql.storage.paths import data_file_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.log.snapshot import Snapshot


def run_merge(ctx: RunContext, statement: Merge, text: str) -> Result:
    """Run ``MERGE INTO``; commit (or stage, inside BEGIN) one ``MERGE`` version."""
    started = time.perf_counter()
    target = statement.target
    if target.version is not None or target.timestamp is not None:
        raise SqlError(
            "cannot MERGE INTO a time-travel reference",
            hint="Merge into the table itself (no VERSION/TIMESTAMP AS OF).",
        )
    log = ctx.catalog.existing_log(target)
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    assert snapshot is not None  # existing_log guarantees a committed version
    source, _ = query_dataframe(ctx, statement.source, txn)
    evolution = evolution_enabled(ctx.spark, statement)
    evolved = evolved_metadata(evolution, statement, snapshot, source)
    note = ""
    if evolved is not None:  # WITH SCHEMA EVOLUTION: new columns commit with the rows
        # ... and so does the feature a new column's type needs (TIMESTAMP_NTZ).
        upgraded = protocol_upgrade.upgrade_for_metadata(snapshot.protocol, evolved)
        features.check_writable(
            upgraded, evolved, existing=snapshot.metadata
        )  # before any file is written
        note = protocol_upgrade.upgrade_note(snapshot.protocol, upgraded)
        txn.stage([upgraded, evolved] if note else [evolved])
        snapshot = txn.current_snapshot()
        assert snapshot is not None
    # A wider source type widens its column when the table and the statement allow it.
    before = snapshot
    wider = candidates(snapshot, merge_sources(statement, snapshot, source.schema.fields))
    if evolution:
        snapshot, widened = widen_columns(txn, snapshot, wider, target.display)
        note = "; ".join(n for n in (note, widened) if n)
    columns = [f["name"] for f in snapshot.schema_json["fields"]]
    plan = plan_merge(merge_with_defaults(statement, snapshot.schema_json), columns, source.columns)
    files = list(snapshot.files)
    if plan.join not in ("left", "full"):  # unmatched target rows are never needed
        files, _ = prune_files(snapshot, target_predicate(plan, snapshot))
    lineage = tuple(lineage_columns(snapshot))
    if lineage:  # an updated row keeps its stable id
        kept = stable_row_id_sql(files, lineage[0], mx.FILE, mx.ROW) or ""
        plan = replace(plan, lineage=lineage, kept_row_id=kept)
    if ansi_off(ctx.spark):  # assigned values must fit, ANSI mode or not
        plan = _fit_checked(plan, snapshot)
    with (
        counting_jobs() as jobs,
        explained_overflow(before, wider, target.display, evolution, text),
    ):
        done = _execute(ctx, plan, snapshot, files, source, target.display)
    # Changed rows are among the matched ones. An insert-only MERGE never sees target row
    # ids (anti-join): its removed files are judged by the join check instead.
    matched = None if plan.join == "insert_only" else done.summary.matched
    record_merge_read(ctx.spark, txn, statement, plan, snapshot, files, done.source_rows, matched)
    txn.stage([*done.outcome.actions, *done.new_files, *done.changes.actions])
    metrics = _metrics(plan, done, elapsed_ms(started), jobs.jobs)
    committed = ctx.commit(txn, "MERGE", operation_parameters(statement), metrics.delta())
    return commit_result(
        text,
        target.display,
        "MERGE",
        committed,
        txn.read_version,
        metrics.shown(),
        message=note if committed is not None else "",
    )


@dataclass(frozen=True)
class _Executed:
    """What the Spark side of a MERGE produced (see :func:`_execute`)."""

    summary: Summary
    source_rows: SourceRows | None
    new_files: list[AddFile]
    outcome: DeletionOutcome
    changes: StatementChanges
    scan_time_ms: int
    rewrite_time_ms: int


def _execute(
    ctx: RunContext,
    plan: MergePlan,
    snapshot: Snapshot,
    files: list[AddFile],
    source: DataFrame,
    table: str,
) -> _Executed:
    """The Spark side of a MERGE: the source job, then one query for a small target
    (:mod:`~txsql.planner.operations.merge.small_target`), else the persisted join.

    The source is persisted for the statement: the join, the source count and the
    conflict check's copy of its ON columns all read the same rows. Files written before
    a failure are removed, and so are the deletion vectors and change files.
    """
    clock = time.perf_counter()
    new_files: list[AddFile] = []
    changes = StatementChanges()
    outcome = DeletionOutcome()
    try:
        with mx.statement_source(source) as (src, counted):
            # Job 1 fills the source's cache (and the conflict check's copy of its ON
            # columns): Spark then plans the join knowing the source's real size. A
            # checkpointed source is stored and counted already, and never recomputed.
            source_rows = capture_source(src, plan, persist=counted is None)
            num_source = counted
            if num_source is None:
                num_source = mx.count_rows(source_rows.kept if source_rows else src)
            types = _column_types(snapshot)
            small = small_target(plan, files, cdf_enabled(snapshot))
            split = small or mx.splits_join(plan, num_source)
            target_df, drop_deleted = _target_scan(ctx, plan, snapshot, files, split, small)

            def write(rows: DataFrame) -> list[AddFile]:
                return _write_new_rows(ctx, plan, rows, snapshot, table)

            with contextlib.ExitStack() as stack:
                rows = None
                if small:
                    summary = run_small_target(
                        plan,
                        target_df,
                        src,
                        num_source,
                        files,
                        types,
                        drop_deleted,
                        write,
                        new_files,
                    )
                else:
                    target_bytes = sum(f.size for f in files)
                    classified = mx.classify(
                        plan,
                        target_df,
                        src,
                        types,
                        matched_only=split,
                        drop_deleted=drop_deleted,
                        broadcast_source=mx.broadcasts_source(num_source, src, target_bytes),
                    )
                    summary, rows = _persisted_join(
                        stack, plan, classified, src, files, types, split, write, new_files
                    )
                summary.num_source_rows = num_source
                check_cardinality(plan, summary)
                check_consistent(plan, summary, new_files)
                scan_ms = elapsed_ms(clock)
                clock = time.perf_counter()
                if summary.changed:
                    outcome = delete_found_rows(ctx, snapshot, summary.changed, candidates=files)
                    if rows is not None and cdf_enabled(snapshot):  # from the persisted rows
                        changes = merge_changes(ctx, snapshot, plan, rows, outcome, table)
                rewrite_ms = elapsed_ms(clock)
    except BaseException:
        _remove_files(snapshot.table_root, new_files)
        outcome.cleanup()
        changes.cleanup()
        raise
    return _Executed(summary, source_rows, new_files, outcome, changes, scan_ms, rewrite_ms)


def _target_scan(
    ctx: RunContext,
    plan: MergePlan,
    snapshot: Snapshot,
    files: list[AddFile],
    split: bool,
    small: bool,
) -> tuple[DataFrame, Callable[[DataFrame], DataFrame] | None]:
    """The target scan with row ids, and how deleted rows leave the join (None: the scan
    applies the DVs itself)."""
    lineage = {"with_lineage": bool(plan.lineage), "stored_lineage": bool(plan.kept_row_id)}
    if not mx.late_dv_filter(plan, split):
        return scan_files(ctx.spark, snapshot, files, with_row_ids=True, **lineage), None
    # No DV expansion and anti-join over the whole target: the joined rows of deleted
    # target rows are dropped after the join, in the same tasks.
    root = snapshot.table_root

    def drop_deleted(df: DataFrame) -> DataFrame:
        return drop_deleted_joined(ctx.spark, df, root, files, mx.FILE, mx.ROW, literals=small)

    live = scan_files(ctx.spark, snapshot, without_dvs(files), with_row_ids=True, **lineage)
    return live, drop_deleted


def _persisted_join(
    stack: contextlib.ExitStack,
    plan: MergePlan,
    classified: DataFrame,
    src: DataFrame,
    files: list[AddFile],
    types: dict[str, str],
    split: bool,
    write: Callable[[DataFrame], list[AddFile]],
    written: list[AddFile],
) -> tuple[Summary, DataFrame]:
    """The classified rows persisted (the write and the summary read them, so a
    non-deterministic condition is evaluated once); returns the summary and the rows."""
    # Every row with a target row is in here (the split's second half has none).
    rows = joined = stack.enter_context(mx.persisted(classified))
    if split:  # the second half reads the first's matched source row ids
        rest = mx.unmatched_source(plan, rows, src, types)
        if inserts_deterministic(plan):
            # Cheap to evaluate twice (source and first half are cached), and a cache of
            # a cache costs Spark a job of its own.
            rows = rows.unionByName(rest)
        else:  # evaluated once: the written rows are the counted ones
            rows = stack.enter_context(mx.persisted(rows.unionByName(rest)))
    # Job 2: new rows first, so a NOT NULL or cast failure stops the MERGE before any DV
    # exists; job 3: counts, cardinality, per-file bitmaps. The write counts the rows per
    # clause on the way (no job of its own).
    counting, observed = rows, None
    if plan.indexes(actions=("update", "insert")):
        counting, observed = observe_counts(plan, rows)
    written += write(counting)
    return summarize(plan, rows, joined, files, observed), rows


def _fit_checked(plan: MergePlan, snapshot: Snapshot) -> MergePlan:
    """Every clause's assigned values checked to fit their columns (see fit_checked)."""
    fields = {f.name: f for f in spark_schema(snapshot.schema_json).fields}
    clauses = tuple(
        c
        if c.outputs is None
        else replace(c, outputs={k: fit_checked(v, fields[k]) for k, v in c.outputs.items()})
        for c in plan.clauses
    )
    return replace(plan, clauses=clauses)


def _column_types(snapshot: Snapshot) -> dict[str, str]:
    schema = spark_schema(snapshot.schema_json)
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def _write_new_rows(
    ctx: RunContext, plan: MergePlan, rows: DataFrame, snapshot: Snapshot, table: str
) -> list[AddFile]:
    """Write updated and inserted rows; casts and NOT NULL checks run inside the write."""
    if not plan.indexes(actions=("update", "insert")):
        return []
    fitted = conform_to_schema(
        mx.new_rows(plan, rows), snapshot.schema_json, plan.target_columns, table, keep=plan.lineage
    )
    return count_job(
        lambda: write_data_files(
            ctx.spark,
            fitted,
            snapshot.table_root,
            snapshot.metadata,
            rewrite=True,
            protocol=snapshot.protocol,
        )
    )


def _remove_files(root: str, adds: list[AddFile]) -> None:
    # Files of a MERGE that failed before committing: invisible, but no need to keep them.
    for add in adds:
        delete_quietly(data_file_path(root, add.path))


def _count(plan: MergePlan, counts: dict[int, int], match: str | None, actions: Any) -> int:
    return sum(counts.get(i, 0) for i in plan.indexes(match, actions))


def _metrics(plan: MergePlan, done: _Executed, execution_ms: int, jobs: int) -> MergeMetrics:
    """Delta's MERGE operationMetrics from the clause counts and the files written."""
    summary, outcome, new_files = done.summary, done.outcome, done.new_files
    counts = summary.counts
    matched_updated = _count(plan, counts, MATCHED, ("update",))
    matched_deleted = _count(plan, counts, MATCHED, ("delete",))
    source_updated = _count(plan, counts, NOT_MATCHED_BY_SOURCE, ("update",))
    source_deleted = _count(plan, counts, NOT_MATCHED_BY_SOURCE, ("delete",))
    inserted = _count(plan, counts, NOT_MATCHED, ("insert",))
    if plan.duplicates_allowed:
        # Several source rows may delete one row: count the rows that went, once each.
        matched_deleted = summary.distinct_matched_changed
    updated = matched_updated + source_updated
    deleted = matched_deleted + source_deleted
    copied = outcome.num_copied_rows
    return MergeMetrics(
        num_source_rows=summary.num_source_rows,
        num_target_rows_inserted=inserted,
        num_target_rows_updated=updated,
        num_target_rows_matched_updated=matched_updated,
        num_target_rows_not_matched_by_source_updated=source_updated,
        num_target_rows_deleted=deleted,
        num_target_rows_matched_deleted=matched_deleted,
        num_target_rows_not_matched_by_source_deleted=source_deleted,
        num_target_rows_copied=copied,
        num_output_rows=inserted + updated + copied,
        num_target_files_added=len(new_files) + outcome.num_added_files,
        num_target_files_removed=outcome.num_removed_files,
        num_target_bytes_added=sum(a.size for a in new_files) + outcome.num_added_bytes,
        num_target_bytes_removed=outcome.num_removed_bytes,
        num_target_change_files_added=done.changes.count,
        **outcome.dv_counts("num_target"),
        execution_time_ms=execution_ms,
        scan_time_ms=done.scan_time_ms,
        rewrite_time_ms=done.rewrite_time_ms,
        spark_jobs=jobs,
    )
