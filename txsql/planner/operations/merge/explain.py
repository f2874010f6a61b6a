"""EXPLAIN MERGE: the join, the files read and the Spark jobs, without running anything.

The planned job count is the one :func:`~txsql.planner.operations.merge.run.run_merge` reports as
``spark_jobs``: one job materializes (and counts) the source; then, for a small target,
one job writes the new rows and observes everything else on the way
(:mod:`~txsql.planner.operations.merge.small_target`); otherwise one job writes the new rows
when an UPDATE or INSERT clause exists and one summarizes the persisted classified rows.
DVs are built on the driver; tables without DVs add a copy-on-write rewrite.
"""

from __future__ import annotations

from typing import Any

from txsql.engine.changes import cdf_enabled
from txsql.errors import SqlError
from txsql.log import features
from txsql.planner.context import RunContext
from txsql.planner.dml.assignments import merge_struct_assignments
from txsql.planner.dml.dv_writes import deletion_vectors_allowed
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.operations.merge.check import target_predicate
from txsql.planner.operations.merge.plan import MergePlan, plan_merge
from txsql.planner.operations.merge.small_target import small_target
from txsql.planner.sql.predicates import prune_files
from txsql.planner.sql.statements import Merge

Step = tuple[str, str]


def planned_merge_jobs(plan: MergePlan, dv: bool, small: bool) -> int:
    """Spark jobs a MERGE runs (``spark_jobs`` in its Result.metrics), DVs allowed or not,
    as one query over a small target or with the persisted join."""
    writes = bool(plan.indexes(actions=("update", "insert")))
    changes = bool(plan.indexes(actions=("update", "delete")))
    main = 1 if small else int(writes) + 1
    return 1 + main + int(changes and not dv)


def explain_merge(ctx: RunContext, statement: Merge) -> tuple[list[Step], dict[str, Any]]:
    """The plan of a MERGE: join kind, pruned target files, steps and Spark jobs."""
    target = statement.target
    if target.version is not None or target.timestamp is not None:
        raise SqlError(
            "cannot MERGE INTO a time-travel reference",
            hint="Merge into the table itself (no VERSION/TIMESTAMP AS OF).",
        )
    ctx.catalog.existing_log(target)
    snapshot = ctx.snapshot(target)
    features.check_writable(snapshot.protocol, snapshot.metadata, existing=snapshot.metadata)
    source, _ = query_dataframe(ctx, statement.source)  # lazy: Spark resolves the schema
    columns = [f["name"] for f in snapshot.schema_json["fields"]]
    fields = snapshot.schema_json["fields"]
    plan = plan_merge(merge_struct_assignments(statement, fields), columns, source.columns)
    files = list(snapshot.files)
    if plan.join not in ("left", "full"):
        files, _ = prune_files(snapshot, target_predicate(plan, snapshot))
    dv = deletion_vectors_allowed(snapshot)
    small = small_target(plan, files, cdf_enabled(snapshot))
    jobs = planned_merge_jobs(plan, dv, small)
    writes = bool(plan.indexes(actions=("update", "insert")))
    steps: list[Step] = [
        ("table", f"{target.display} at version {snapshot.version}, {len(snapshot.files)} file(s)"),
        ("on", plan.on),
        ("join", _join_text(plan, small)),
        ("files", f"{len(files)} of {len(snapshot.files)} target file(s) read"),
        ("step 1", "job: persist the source, count it, keep its ON columns (conflict check)"),
    ]
    if small:
        what = "write updated and inserted rows" if writes else "read the joined rows"
        steps.append(("step 2", f"job: {what}; counts per clause and matched row keys observed"))
    else:
        steps.append(
            ("step 2", "classify each joined row by the first clause that applies; persist")
        )
        if writes:
            steps.append(("step 3", "job: write updated and inserted rows as new data files"))
        steps.append(
            ("step 4", "job: counts per clause, duplicate-match check, per-file row bitmaps")
        )
    if plan.indexes(actions=("update", "delete")):
        how = "driver: write DVs of updated/deleted rows" if dv else "copy-on-write rewrite (job)"
        steps.append(("step 3" if small else "step 5", how))
    steps.append(("spark jobs", str(jobs)))
    return steps, {
        "files_total": len(snapshot.files),
        "files_scanned": len(files),
        "spark_jobs": jobs,
    }


def _join_text(plan: MergePlan, small: bool) -> str:
    if small and plan.join != "inner":
        return (
            f"{plan.join}: target x source, then source rows no target row matches "
            "(left anti-join with the small target), one query"
        )
    if plan.join in ("right", "full", "insert_only"):
        return (
            f"{plan.join}: target x broadcast source, then source rows whose ids did not "
            "match (sources over the split limit: one Spark join)"
        )
    return f"{plan.join} join of the target with the source (broadcast when small)"
