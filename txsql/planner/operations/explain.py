"""EXPLAIN <statement>: how txsql would run a statement, without running it.

For DELETE and UPDATE it shows the WHERE clause split into partition / data / remaining
conjuncts, which files are removed whole, scanned or skipped (and why), the filters Spark
pushes into the Parquet reader of the scan (row groups and pages it skips by their
statistics), and the planned steps. Queries show Spark's own plan. Other statements
register an explainer in :data:`txsql.planner.registry.STATEMENTS` (MERGE:
:mod:`txsql.planner.operations.merge.explain`). Nothing is written and no transaction
starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from txsql.engine.scan import pushed_filters
from txsql.log.actions import AddFile
from txsql.log.predicates import split_predicate, to_sql
from txsql.planner.context import RunContext
from txsql.planner.dml.dv_writes import DIRECT_ROWS, deletion_vectors_allowed
from txsql.planner.dml.live_rows import without_dvs
from txsql.planner.dml.reads import substitute_tables
from txsql.planner.dml.target import open_target
from txsql.planner.frames import Frames
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.dml import path_sql
from txsql.planner.sql.statements import Delete, Explain, Query, Update
from txsql.result import Result

NAME_LIMIT = 10
Step = tuple[str, str]
Explainer = Callable[[RunContext, Any], tuple[list[Step], dict[str, int]]]


def run_explain(
    ctx: RunContext, statement: Explain, text: str, explainer: Explainer | None = None
) -> Result:
    """Show the plan of ``statement.statement`` made by ``explainer`` (the registry's)."""
    explainer = explainer or generic_plan
    steps, metrics = explainer(ctx, statement.statement)
    steps = [("statement", " ".join(statement.text.split())), *steps]
    df = ctx.spark.createDataFrame(steps, "step string, detail string")
    width = max(len(name) for name, _ in steps)
    message = "\n".join(f"{name.ljust(width)}  {detail}" for name, detail in steps)
    return Result(text, "EXPLAIN", df=df, metrics=metrics, message=message)


def explain_dml(ctx: RunContext, statement: Delete | Update) -> tuple[list[Step], dict[str, int]]:
    """The plan of a DELETE or UPDATE: predicate split, file pruning, steps."""
    operation = "DELETE" if isinstance(statement, Delete) else "UPDATE"
    target = open_target(
        ctx, statement.target, statement.alias, statement.where, operation, explain=True
    )
    snapshot = target.snapshot
    partition, data, rest = split_predicate(target.predicate, snapshot.partition_columns)
    plan = target.plan(whole_files=isinstance(statement, Delete))
    skipped_by_stats = len(plan.skipped) - plan.skipped_by_partition
    dv = deletion_vectors_allowed(snapshot)
    steps: list[Step] = [
        ("table", f"{target.display} at version {snapshot.version}, {len(snapshot.files)} file(s)"),
        ("predicate", to_sql(target.predicate)),
        ("partition filter", to_sql(partition)),
        ("data filter (stats)", to_sql(data)),
        ("remaining filter", to_sql(rest)),
        (
            "files",
            f"{len(plan.scan)} scanned, {len(plan.whole)} removed without scanning, "
            f"{len(plan.skipped)} skipped ({plan.skipped_by_partition} by partition, "
            f"{skipped_by_stats} by stats)",
        ),
    ]
    for label, files in (("scanned", plan.scan), ("removed whole", plan.whole)):
        if files:
            steps.append((label, _names(files)))
    if plan.skipped:
        steps.append(("skipped", _names(plan.skipped)))
    if plan.scan:
        # Spark's own physical plan of the statement's scan
        filters = pushed_filters(target.matching_rows(without_dvs(plan.scan)))
        steps.append(("pushed filters", "; ".join(filters) or "none: every row group is read"))
    steps += [(f"step {i}", s) for i, s in enumerate(_steps(statement, plan.scan, dv), 1)]
    if plan.whole:
        steps.append(("metadata-only", f"remove {len(plan.whole)} file(s) from the log"))
    jobs = _planned_jobs(statement, plan.scan, dv)
    steps.append(("spark jobs", str(jobs) if dv or not plan.scan else f"{jobs} or more"))
    metrics = {
        "files_total": len(snapshot.files),
        "files_scanned": len(plan.scan),
        "files_removed_whole": len(plan.whole),
        "files_skipped": len(plan.skipped),
        "files_skipped_by_partition": plan.skipped_by_partition,
        "files_skipped_by_stats": skipped_by_stats,
        "spark_jobs": jobs,
    }
    return steps, metrics


def _planned_jobs(statement: Delete | Update, scanned: Sequence[AddFile], dv: bool) -> int:
    """Spark actions txsql will run (``spark_jobs`` of the statement's Result.metrics).

    DELETE: one job finds the matched rows; UPDATE: one job writes the new rows and
    observes which rows they replace. Copy-on-write (no DVs) adds a rewrite of the touched
    files. Either runs one job more when a task matches more than the driver may collect
    (see planner/dml/few_rows.py).
    """
    if not scanned:
        return 0
    return 1 if dv else 2


def _steps(statement: Delete | Update, scanned: Sequence[AddFile], dv: bool) -> list[str]:
    if not scanned:
        return ["commit (no file needs scanning)"]
    where = statement.where.sql(SPARK) if statement.where is not None else "true"
    steps = [
        f"scan {len(scanned)} file(s) with _file/_row_index (existing DVs not applied); "
        f"Spark filters by {where}"
    ]
    many = f"more than {DIRECT_ROWS:,} rows"
    if isinstance(statement, Update):
        sets = ", ".join(f"{path_sql(c)} = {v.sql(SPARK)}" for c, v in statement.assignments)
        steps.append("drop rows existing DVs delete (in the same tasks)")
        steps.append(
            f"job 1: write the updated rows ({sets}) as new data files, observing the "
            "(file, row index) of each row written"
        )
        steps.append(f"job 2 only if the scan's tasks match {many}: persisted rows, grouped")
    else:
        steps.append(
            "job 1: collect the matched (file, row index) pairs as Arrow; if the scan's "
            f"tasks match {many}, one more job groups them per file on the executors"
        )
    if dv:
        steps.append("driver: subtract old DVs, write all new DVs into one DV file")
        steps.append("commit remove(F, oldDV) + add(F, newDV); remove(F) when all rows deleted")
    else:
        steps.append("copy-on-write: rewrite touched files without the matched rows (no DVs)")
        steps.append("commit remove(F) + add(rewritten files)")
    return steps


def _names(files: Sequence[AddFile]) -> str:
    names = [f.path for f in files[:NAME_LIMIT]]
    more = len(files) - len(names)
    return ", ".join(names) + (f" … and {more} more" if more > 0 else "")


def explain_query(ctx: RunContext, statement: Query) -> tuple[list[Step], dict[str, int]]:
    frames = Frames()
    rewritten, versions = substitute_tables(ctx, statement.expression, frames)
    steps: list[Step] = [("reads", f"{name} at version {v}") for name, v in versions.items()]
    row = frames.sql(ctx.spark, rewritten, prefix="EXPLAIN ").first()
    plan = str(row[0]) if row is not None else ""
    steps += [("spark plan", line) for line in plan.splitlines() if line.strip()]
    return steps, {}


def generic_plan(ctx: RunContext, statement: Any) -> tuple[list[Step], dict[str, int]]:
    del ctx
    kind = type(statement).__name__
    return [("plan", f"{kind}: runs as one transaction; no detailed plan is available")], {}
