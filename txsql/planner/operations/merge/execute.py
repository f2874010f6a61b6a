"""MERGE on Spark: join target and source, and give every row the clause that applies.

One projection computes, per joined row, the index of the first clause (in statement
order, within its kind) whose condition holds (``-1``: none does) and, for UPDATE and
INSERT clauses, the new row, each value cast to its column type like a store assignment.
Rows that neither match nor get an action are dropped, so what gets persisted is small:
the touched target rows, the matched ones and the rows to insert.

Spark jobs (each through :func:`~txsql.planner.dml.jobs.count_job`): :func:`count_rows`
materializes the persisted source, or :func:`statement_source` checkpoints a source slow
to plan, in one job either way (so Spark sees its real size; a source too big for
Spark's broadcast threshold but small next to the target is broadcast by a hint,
:func:`broadcasts_source`), the new rows are written, and
:func:`~txsql.planner.operations.merge.summary.summarize` returns counts and per-file
bitmaps; the DVs are built from those bitmaps without another job.

The join reads every target column once: a narrow join (ON columns, file, row index) plus
a second read of full rows at the matched positions cost 1.6x the CPU at 5M rows
(benchmarks/README.md, "MERGE into a big target"). The target's ``_file`` (a map lookup on
a CRC of Spark's path) stays below the join: code generation computes it only for the
rows the join outputs, so a cheaper file key saved no task CPU (same section).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyspark.sql import Observation
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from txsql.engine.schema import quote
from txsql.errors import SchemaError
from txsql.planner.dml.jobs import count_job
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
SOURCE_ID = f"__txsql_source_id_{_TAG}"
KEPT_ROW_ID = f"__txsql_row_id_{_TAG}"  # the stable id an updated target row keeps
SPLIT_ROWS_ENV = "TXSQL_MERGE_SPLIT_MAX_SOURCE_ROWS"
"""Sources with at most this many rows get the split join (see :func:`splits_join`)."""
_DEFAULT_SPLIT_ROWS = 2_000_000
BROADCAST_BYTES_ENV = "TXSQL_MERGE_BROADCAST_MAX_SOURCE_BYTES"
"""Sources estimated at most this many bytes are broadcast (see :func:`broadcasts_source`)."""
_DEFAULT_BROADCAST_BYTES = 64 << 20
CHECKPOINT_PLANNING_ENV = "TXSQL_MERGE_CHECKPOINT_PLANNING_SECONDS"
"""Sources whose planning takes longer are checkpointed (see :func:`statement_source`)."""
_DEFAULT_CHECKPOINT_PLANNING = 0.1
# Bytes per value by Spark SQL type name, for the estimate of broadcasts_source(); types
# not listed (strings, binaries, nested values) count as _OTHER_BYTES (Spark's own default
# size for a string is 20).
_FIXED_BYTES = {
    "boolean": 1,
    "tinyint": 1,
    "smallint": 2,
    "int": 4,
    "date": 4,
    "float": 4,
    "bigint": 8,
    "double": 8,
    "timestamp": 8,
    "timestamp_ntz": 8,
}
_OTHER_BYTES = 32


@contextmanager
def statement_source(source: DataFrame) -> Iterator[tuple[DataFrame, int | None]]:
    """The source with its marker columns (:func:`with_source_marker`), read once for the
    statement, and its row count when already known (else None: count it with
    :func:`count_rows`, which also fills the cache).

    Persisted for the block, unless planning it took longer than
    :data:`CHECKPOINT_PLANNING_ENV` seconds (default 0.1): a plan that carries its rows
    (a pandas or Arrow DataFrame is a ``LocalRelation`` of every row) is re-analysed
    by each of the statement's ~20 later DataFrame steps, row by row, and a persisted
    plan still carries them. Then the source is checkpointed (one job, which also counts
    it): later steps analyse a reference to the stored rows instead (benchmarks/README.md,
    "MERGE at its floor"). Spark frees a checkpoint once nothing references it.
    """
    marked = with_source_marker(source)
    started = time.perf_counter()
    cached = marked.persist(StorageLevel.MEMORY_AND_DISK)
    slow = time.perf_counter() - started > float(
        os.environ.get(CHECKPOINT_PLANNING_ENV, _DEFAULT_CHECKPOINT_PLANNING)
    )
    try:
        if not slow:
            yield cached, None
            return
        # Checkpointed through the persisted plan: the cache it fills for the moment costs
        # less than planning the slow plan a second time.
        counted, observed = _observing_count(cached)
        cut = count_job(
            lambda: counted.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        )
        cached.unpersist()  # the checkpoint holds the rows now
        metrics = observed.get
        # Spark Connect reports no observed metrics for a checkpoint: count the stored rows.
        rows = int(metrics["n"]) if "n" in metrics else count_rows(cut)
        yield cut, rows
    finally:
        cached.unpersist()


@contextmanager
def persisted(df: DataFrame) -> Iterator[DataFrame]:
    """``df`` persisted (memory, spilling to disk) for the block, unpersisted after.

    Persisting rather than ``localCheckpoint`` because Spark Connect lacks the latter;
    disk spill keeps cached partitions from being evicted and recomputed, which for a
    non-deterministic source would change the rows between the later uses (new rows,
    deletion vectors).
    """

    cached = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        yield cached
    finally:
        cached.unpersist()


def with_source_marker(source: DataFrame) -> DataFrame:
    """The source with a non-null marker column (NULL after an outer join = no source row)
    and a row id (stable once the source is persisted) naming the source rows that matched.

    The marker's value is new for every statement: Spark reuses a cached relation whose
    plan is the same, so without it a MERGE whose source query equals an earlier one's
    would persist nothing new (and read the earlier statement's rows wherever the earlier
    cache is still held, e.g. the conflict check's copy of its ON columns).
    """
    marker = F.lit(uuid.uuid4().int >> 65)  # any non-NULL value: a long, unique per call
    return source.withColumn(SOURCE_PRESENT, marker).withColumn(
        SOURCE_ID, F.monotonically_increasing_id()
    )


def count_rows(df: DataFrame) -> int:
    """Rows of ``df`` in ONE Spark job, JVM only; run on a persisted DataFrame it also
    fills the cache, so Spark then knows the real size and broadcasts a small source
    instead of shuffling the target.

    The rows go to Spark's ``noop`` sink with an observed ``count``: no shuffle (``count()``
    adds an aggregate stage, a job of its own under AQE) and no Python worker (a
    ``mapInArrow`` count paid ~0.1 s per task for the worker round trip).
    """

    counted, observed = _observing_count(df)
    run_rows(counted)
    return int(observed.get["n"])


def _observing_count(df: DataFrame) -> tuple[DataFrame, Observation]:
    """``df`` counting its rows into the returned observation (``n``) as a job reads it."""
    observed = Observation(f"txsql_merge_source_{uuid.uuid4().hex}")
    return df.observe(observed, F.count(F.lit(1)).alias("n")), observed


def run_rows(df: DataFrame) -> None:
    """Compute every row of ``df`` and keep none (Spark's ``noop`` sink): one Spark job,
    for what ``df`` observes on the way."""
    count_job(lambda: df.write.format("noop").mode("overwrite").save())


def splits_join(plan: MergePlan, num_source_rows: int) -> bool:
    """Whether to run the join as target x source plus "source rows nobody matched".

    Spark's broadcast hash join cannot keep the unmatched rows of its build side, so a
    right or full outer join (NOT MATCHED clauses) would shuffle the whole target. Split,
    the target streams past the broadcast source once and the unmatched source rows are
    the source minus the matched source row ids (a small broadcast). Needs a deterministic
    ON (the matched ids must be those of the first pass) and a source small enough that
    its row ids broadcast comfortably.
    """
    limit = int(os.environ.get(SPLIT_ROWS_ENV, _DEFAULT_SPLIT_ROWS))
    return (
        plan.join in ("right", "full", "insert_only")
        and plan.on_deterministic
        and num_source_rows <= limit
    )


def broadcasts_source(num_source_rows: int, source: DataFrame, target_bytes: int) -> bool:
    """Whether the join broadcasts the (persisted) source whatever Spark's
    ``autoBroadcastJoinThreshold`` (10 MB by default) says.

    Above that threshold Spark sort-merge joins, shuffling every target row although the
    source is the small side (benchmarks/README.md, "MERGE at its floor"). So the source
    is broadcast when its estimated size
    (rows x a per-type width) is at most :data:`BROADCAST_BYTES_ENV` (default 64 MB: the
    driver collects it) and below the target files' bytes (otherwise Spark's own choice,
    maybe broadcasting the target, stands).
    """
    limit = int(os.environ.get(BROADCAST_BYTES_ENV, _DEFAULT_BROADCAST_BYTES))
    width = sum(_FIXED_BYTES.get(f.dataType.simpleString(), _OTHER_BYTES) for f in source.schema)
    estimate = num_source_rows * (width + 8)  # + 8: Spark's per-row overhead
    return estimate <= limit and estimate < target_bytes


def classify(
    plan: MergePlan,
    target: DataFrame,
    source: DataFrame,
    column_types: dict[str, str],
    *,
    matched_only: bool = False,
    drop_deleted: Callable[[DataFrame], DataFrame] | None = None,
    broadcast_source: bool = False,
) -> DataFrame:
    """Join and classify; returns ``FILE, ROW, SOURCE_ID, ACTION, MATCHED_FLAG`` and the
    new rows.

    Args:
        plan: The resolved MERGE.
        target: The target scan, its hidden file and row-index columns last.
        source: The (persisted) source from :func:`with_source_marker`.
        column_types: Target column -> Spark SQL type, for the assignment casts.
        matched_only: The first half of a split join (:func:`splits_join`): target rows
            joined with the source, never unmatched source rows; complete it with
            :func:`unmatched_source`.
        drop_deleted: Given when ``target`` ignores its files' DVs (no DV expansion and
            anti-join over the whole target): drops joined rows of deleted target rows,
            after the join. Only for joins whose output keeps nothing of such a row
            (inner or target-preserving left joins, :func:`late_dv_filter`).
        broadcast_source: Broadcast the source (:func:`broadcasts_source`) where the
            join can build on it (inner and left joins).
    """
    if plan.join == "insert_only" and not matched_only:
        # Only source rows without any match can act: an anti-join, no target ids needed.
        return unmatched_by_anti_join(plan, target, source, column_types)
    _check_helper_names([*target.columns, *source.columns])
    # scan_snapshot puts the hidden columns last; their names depend on the table's columns.
    target = target.toDF(*target.columns[:-2], FILE, ROW)
    tgt = target.alias(plan.target_alias)
    src = source.alias(plan.source_alias)
    on = F.expr(plan.on)
    join = plan.join
    if matched_only:  # keep unmatched target rows only for NOT MATCHED BY SOURCE clauses
        join = "left" if plan.join == "full" else "inner"
    action = (
        f"CASE WHEN {FILE} IS NOT NULL AND {SOURCE_PRESENT} IS NOT NULL "
        f"THEN {_group_case(plan, MATCHED)} "
        f"WHEN {SOURCE_PRESENT} IS NOT NULL THEN {_group_case(plan, NOT_MATCHED)} "
        f"ELSE {_group_case(plan, NOT_MATCHED_BY_SOURCE)} END"
    )
    matched = f"{FILE} IS NOT NULL AND {SOURCE_PRESENT} IS NOT NULL"
    if broadcast_source and join in ("inner", "left"):  # the right side is the build side
        src = F.broadcast(src)
    joined = tgt.join(src, on, join)
    if drop_deleted is not None:
        assert join in ("inner", "left"), "deleted rows dropped after a preserving join"
        joined = drop_deleted(joined)
    return _classified(
        plan, joined, matched, action, column_types, every_row_matched=join == "inner"
    )


def late_dv_filter(plan: MergePlan, split: bool) -> bool:
    """Whether the target may be scanned ignoring DVs, deleted rows dropped after the
    join: only when every joined row of a target row comes from that row (inner or left
    join), never a source row kept because the row did not match (right/full/anti)."""
    return split or plan.join in ("inner", "left")


def unmatched_by_anti_join(
    plan: MergePlan,
    target: DataFrame,
    source: DataFrame,
    column_types: dict[str, str],
    drop_deleted: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """Source rows no live target row matches under ON, classified by the NOT MATCHED
    clauses: the source left-anti-joined with the target (which Spark broadcasts when it
    is the small side). ``drop_deleted`` as in :func:`classify`, applied to the target's
    rows before the join."""
    _check_helper_names([*target.columns, *source.columns])
    target = target.toDF(*target.columns[:-2], FILE, ROW)
    if drop_deleted is not None:
        target = drop_deleted(target)
    src = source.alias(plan.source_alias)
    joined = src.join(target.alias(plan.target_alias), F.expr(plan.on), "left_anti")
    action = _group_case(plan, NOT_MATCHED)
    return _classified(plan, joined, None, action, column_types, NOT_MATCHED)


def unmatched_source(
    plan: MergePlan, matched: DataFrame, source: DataFrame, column_types: dict[str, str]
) -> DataFrame:
    """The second half of a split join: source rows no target row matched, classified by
    the NOT MATCHED clauses. ``matched`` is the (persisted) first half."""
    ids = matched.filter(F.col(MATCHED_FLAG)).select(SOURCE_ID)
    rows = source.alias(plan.source_alias).join(F.broadcast(ids), SOURCE_ID, "left_anti")
    return _classified(plan, rows, None, _group_case(plan, NOT_MATCHED), column_types, NOT_MATCHED)


def _classified(
    plan: MergePlan,
    joined: DataFrame,
    matched: str | None,
    action: str,
    column_types: dict[str, str],
    only: str | None = None,
    *,
    every_row_matched: bool = False,
) -> DataFrame:
    """The classify projection; ``matched`` (SQL) None: rows without a target side, whose
    values come from the ``only`` kind of clause (the others read the target).

    Built as SQL text, one ``selectExpr`` per projection: a Column per piece cost a py4j
    round trip each (~100 per classified half of a 4-column table)."""
    if matched is None:
        ids = [f"CAST(NULL AS STRING) AS {FILE}", f"CAST(NULL AS BIGINT) AS {ROW}"]
        ids += [f"CAST(NULL AS BIGINT) AS {KEPT_ROW_ID}"] if plan.lineage else []
        matched = "false"
    else:
        ids = [FILE, ROW]
        kept = (plan.kept_row_id or quote(plan.lineage[0])) if plan.lineage else ""
        ids += [f"{kept} AS {KEPT_ROW_ID}"] if plan.lineage else []
    # A separate projection evaluates each condition once per row; the value columns below
    # only look the action up (Spark will not inline a non-deterministic CASE into them).
    joined = joined.selectExpr("*", f"{action} AS {ACTION}")
    values = []
    producing = [
        c for c in plan.clauses if c.outputs is not None and only in (None, c.clause.match)
    ]
    for column in plan.target_columns if producing else ():
        cast = column_types[column]
        branches = " ".join(
            f"WHEN {c.index} THEN CAST(({c.outputs[column]}) AS {cast})"
            for c in producing
            if c.outputs is not None
        )
        values.append(f"CASE {ACTION} {branches} END AS {quote(column)}")
    out = joined.selectExpr(*ids, SOURCE_ID, ACTION, f"{matched} AS {MATCHED_FLAG}", *values)
    if every_row_matched:
        return out
    return out.where(f"{ACTION} >= 0 OR {MATCHED_FLAG}")


def _group_case(plan: MergePlan, match: str) -> str:
    clauses = [c for c in plan.clauses if c.clause.match == match]
    if not clauses:
        return "-1"
    whens = " ".join(f"WHEN ({c.condition}) THEN {c.index}" for c in clauses)
    return f"CASE {whens} ELSE -1 END"


def new_rows(plan: MergePlan, rows: DataFrame) -> DataFrame:
    """The rows to write: updated rows' new versions and inserted rows; on a table keeping
    stable row ids, then the materialized columns: an updated row keeps its id (an
    inserted one has none yet), and both take this commit's version (NULL: the new file's
    ``defaultRowCommitVersion``)."""
    producing = ", ".join(str(i) for i in plan.indexes(actions=("update", "insert")))
    kept = rows.where(f"{ACTION} IN ({producing})") if producing else rows.where("false")
    lineage = []
    if plan.lineage:
        row_id, version = (quote(name) for name in plan.lineage)
        lineage = [f"{KEPT_ROW_ID} AS {row_id}", f"CAST(NULL AS BIGINT) AS {version}"]
    return kept.selectExpr(*[quote(c) for c in plan.target_columns], *lineage)


def _check_helper_names(columns: list[str]) -> None:
    helpers = {
        n.lower() for n in (FILE, ROW, ACTION, MATCHED_FLAG, SOURCE_PRESENT, SOURCE_ID, KEPT_ROW_ID)
    }
    clash = sorted({c for c in columns if c.lower() in helpers} - {SOURCE_PRESENT, SOURCE_ID})
    if clash:
        raise SchemaError(
            f"MERGE: column name {clash[0]!r} is reserved for this MERGE's bookkeeping",
            hint="Rename that column in the source query (e.g. SELECT ... AS other_name).",
        )
