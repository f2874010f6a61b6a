"""MERGE on Spark: join target and source, and give every row the clause that applies.

One projection computes, per joined row, the index of the first clause (in statement
order, within its kind) whose condition holds (``-1``: none does) and, for UPDATE and
INSERT clauses, the new row, each value cast to its column type like a store assignment.
Rows that neither match nor get an action are dropped, so what gets persisted is small:
the touched target rows, the matched ones and the rows to insert.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64
from pyspark.sql import functions as F

from txsql.engine.scan import row_id_columns
from txsql.errors import MergeCardinalityError, SchemaError
from txsql.planner.operations.merge.plan import MergePlan
from txsql.planner.sql.statements import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Helper columns live next to every target and source column. A per-process random tag
# keeps them apart from any user column (a source may be any query, so no fixed name is
# safe); classify() still checks, so a clash is an error, never a silently wrong MERGE.
_TAG = uuid.uuid4().hex[:8]
FILE = f"__txsql_file_{_TAG}"
ROW = f"__txsql_row_{_TAG}"
ACTION = f"__txsql_action_{_TAG}"
MATCHED_FLAG = f"__txsql_matched_{_TAG}"
SOURCE_PRESENT = f"__txsql_source_{_TAG}"
_SOURCE_ROW = -99  # action of the source row count in summarize()
_N = f"__txsql_n_{_TAG}"
_SUMMARY = pa.schema(
    [
        ("path", pa.string()),
        ("action", pa.int32()),
        ("n", pa.int64()),
        ("distinct", pa.int64()),
        ("rows", pa.binary()),
    ]
)


@contextmanager
def persisted(df: DataFrame) -> Iterator[DataFrame]:
    """``df`` persisted (memory, spilling to disk) for the block, unpersisted after.

    Persisting rather than ``localCheckpoint`` because Spark Connect lacks the latter;
    disk spill keeps cached partitions from being evicted and recomputed, which for a
    non-deterministic source would change the rows between the later uses (new rows,
    deletion vectors).
    """
    from pyspark.storagelevel import StorageLevel

    cached = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        yield cached
    finally:
        cached.unpersist()


def with_source_marker(source: DataFrame) -> DataFrame:
    """The source with a non-null marker column: NULL after an outer join = no source row."""
    return source.withColumn(SOURCE_PRESENT, F.lit(True))


def classify(
    plan: MergePlan, target: DataFrame, source: DataFrame, column_types: dict[str, str]
) -> DataFrame:
    """Join and classify; returns ``FILE, ROW, ACTION, MATCHED_FLAG`` and the new rows.

    Args:
        plan: The resolved MERGE.
        target: The target scan, its hidden file and row-index columns last.
        source: The (persisted) source with :data:`SOURCE_PRESENT`.
        column_types: Target column -> Spark SQL type, for the assignment casts.
    """
    _check_helper_names([*target.columns, *source.columns])
    # scan_snapshot puts the hidden columns last; their names depend on the table's columns.
    target = target.toDF(*target.columns[:-2], FILE, ROW)
    tgt = target.alias(plan.target_alias)
    src = source.alias(plan.source_alias)
    on = F.expr(plan.on)
    if plan.join == "insert_only":
        # Only source rows without any match can act: an anti-join, no target ids needed.
        joined = src.join(tgt, on, "left_anti")
        ids = [F.lit(None).cast("string").alias(FILE), F.lit(None).cast("long").alias(ROW)]
        matched = F.lit(False)
        action = _group_case(plan, NOT_MATCHED)
    else:
        joined = tgt.join(src, on, plan.join)
        ids = [F.col(FILE), F.col(ROW)]
        matched = F.col(FILE).isNotNull() & F.col(SOURCE_PRESENT).isNotNull()
        action = (
            f"CASE WHEN {FILE} IS NOT NULL AND {SOURCE_PRESENT} IS NOT NULL "
            f"THEN {_group_case(plan, MATCHED)} "
            f"WHEN {SOURCE_PRESENT} IS NOT NULL THEN {_group_case(plan, NOT_MATCHED)} "
            f"ELSE {_group_case(plan, NOT_MATCHED_BY_SOURCE)} END"
        )
    # A separate projection evaluates each condition once per row; the value columns below
    # only look the action up (Spark will not inline a non-deterministic CASE into them).
    joined = joined.withColumn(ACTION, F.expr(action))
    values = []
    producing = [c for c in plan.clauses if c.outputs is not None]
    for column in plan.target_columns if producing else ():
        cast = column_types[column]
        branches = " ".join(
            f"WHEN {c.index} THEN CAST(({c.outputs[column]}) AS {cast})"
            for c in producing
            if c.outputs is not None
        )
        values.append(F.expr(f"CASE {ACTION} {branches} END").alias(column))
    out = joined.select(*ids, F.col(ACTION), matched.alias(MATCHED_FLAG), *values)
    return out.filter((F.col(ACTION) >= 0) | F.col(MATCHED_FLAG))


def _group_case(plan: MergePlan, match: str) -> str:
    clauses = [c for c in plan.clauses if c.clause.match == match]
    if not clauses:
        return "-1"
    whens = " ".join(f"WHEN ({c.condition}) THEN {c.index}" for c in clauses)
    return f"CASE {whens} ELSE -1 END"


@dataclass
class Summary:
    """What one pass over the classified rows found.

    Attributes:
        counts: Rows per clause index (``-1``: matched without an action).
        num_source_rows: Rows of the source.
        duplicate_matches: Extra source rows matching an already matched target row that
            a MATCHED clause changes (Delta's "effective" duplicate matches).
        distinct_matched_changed: Target rows changed by MATCHED clauses, each once.
        matched: Per file, the physical rows the MERGE matched or changed (read set).
    """

    counts: dict[int, int] = field(default_factory=dict)
    num_source_rows: int = 0
    duplicate_matches: int = 0
    distinct_matched_changed: int = 0
    matched: dict[str, BitMap64] = field(default_factory=dict)


def summarize(plan: MergePlan, rows: DataFrame, source: DataFrame) -> Summary:
    """Counts, the duplicate-match check's input and matched rows, in one Spark job.

    Rows are shuffled by target file, so all pairs of one target row meet in one task,
    which groups them into bitmaps (numpy, no per-row Python). The source is counted in
    the same job, pre-aggregated to one row (action :data:`_SOURCE_ROW`, count in ``n``).
    """
    ids = rows.select(FILE, ROW, ACTION, F.lit(1).cast("long").alias(_N))
    source_count = source.agg(
        F.lit(None).cast("string").alias(FILE),
        F.lit(None).cast("long").alias(ROW),
        F.lit(_SOURCE_ROW).alias(ACTION),
        F.count(F.lit(1)).alias(_N),
    )
    task = _summary_task(plan.indexes(MATCHED))
    results = (
        ids.unionByName(source_count)
        .repartition(FILE)
        .mapInArrow(task, "path string, action int, n bigint, distinct bigint, rows binary")
        .collect()
    )
    out = Summary()
    for r in results:
        if r["path"] is None:
            action = int(r["action"])
            if action == _SOURCE_ROW:
                out.num_source_rows += int(r["n"])
            else:
                out.counts[action] = out.counts.get(action, 0) + int(r["n"])
            continue
        out.duplicate_matches += int(r["n"])
        out.distinct_matched_changed += int(r["distinct"])
        bitmap = BitMap64.deserialize(r["rows"])
        out.matched.setdefault(r["path"], BitMap64()).update(bitmap)
    return out


def check_cardinality(plan: MergePlan, summary: Summary) -> None:
    """Delta's rule: a target row may be updated or deleted by at most one source row.

    Only matches that take an action count (Delta's "effective" matches), and one
    unconditional ``WHEN MATCHED THEN DELETE`` is exempt (every pair deletes the row).

    Raises:
        MergeCardinalityError: some target row is changed by several source rows.
    """
    if summary.duplicate_matches and not plan.duplicates_allowed:
        raise MergeCardinalityError(
            "MERGE cannot update or delete a target row that several source rows match "
            "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]: "
            f"{summary.duplicate_matches} extra source row(s) match already matched rows"
        )


def _summary_task(
    effective: list[int],
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The executor function of :func:`summarize`."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        counts: dict[int, int] = {}
        targets: list[pa.RecordBatch] = []
        # Streamed: rows without a target file (inserts, the source count) are only
        # counted, so a task never holds them all; target rows are kept for grouping.
        for batch in batches:
            actions = batch.column(ACTION).to_numpy(zero_copy_only=False)
            weights = batch.column(_N).to_numpy(zero_copy_only=False)
            for value in np.unique(actions).tolist():
                counts[value] = counts.get(value, 0) + int(weights[actions == value].sum())
            valid = batch.filter(pc.is_valid(batch.column(FILE)))
            if valid.num_rows:
                targets.append(valid)
        out: dict[str, list[Any]] = {k: [] for k in ("path", "action", "n", "distinct", "rows")}
        for value, count in counts.items():
            for key, item in zip(out, (None, value, count, 0, None)):
                out[key].append(item)
        if targets:
            table = pa.Table.from_batches(targets)
            grouped = table.group_by(FILE).aggregate([(ROW, "list"), (ACTION, "list")])
            for path, rows, acts in zip(
                grouped.column(FILE).to_pylist(),
                grouped.column(f"{ROW}_list"),
                grouped.column(f"{ACTION}_list"),
            ):
                row_ids = rows.values.to_numpy(zero_copy_only=False).astype(np.uint64)
                acting = row_ids[np.isin(acts.values.to_numpy(zero_copy_only=False), effective)]
                changed = BitMap64()
                changed.update(acting)
                everything = BitMap64()
                everything.update(row_ids)
                for key, item in zip(
                    out,
                    (path, None, len(acting) - len(changed), len(changed), everything.serialize()),
                ):
                    out[key].append(item)
        if counts:
            yield pa.RecordBatch.from_pydict(out, schema=_SUMMARY)

    return run


def new_rows(plan: MergePlan, rows: DataFrame) -> DataFrame:
    """The rows to write: updated rows' new versions and inserted rows."""
    producing = plan.indexes(actions=("update", "insert"))
    return rows.filter(F.col(ACTION).isin(producing)).select(
        *[F.col(f"`{c}`") for c in plan.target_columns]
    )


def changed_target_rows(plan: MergePlan, rows: DataFrame) -> DataFrame:
    """``_file, _row_index`` of target rows updated or deleted (their old versions go)."""
    changing = plan.indexes(MATCHED, ("update", "delete")) + plan.indexes(
        NOT_MATCHED_BY_SOURCE, ("update", "delete")
    )
    file_column, row_column = row_id_columns(plan.target_columns)
    ids = rows.filter(F.col(ACTION).isin(changing)).select(
        F.col(FILE).alias(file_column), F.col(ROW).alias(row_column)
    )
    return ids  # rows listed twice (the exempt unconditional DELETE) are marked once


def _check_helper_names(columns: list[str]) -> None:
    helpers = {n.lower() for n in (FILE, ROW, ACTION, MATCHED_FLAG, SOURCE_PRESENT, _N)}
    clash = sorted({c for c in columns if c.lower() in helpers} - {SOURCE_PRESENT})
    if clash:
        raise SchemaError(
            f"MERGE: column name {clash[0]!r} is reserved for this MERGE's bookkeeping",
            hint="Rename that column in the source query (e.g. SELECT ... AS other_name).",
        )
