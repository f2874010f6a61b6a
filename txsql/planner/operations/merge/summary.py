"""MERGE's summary of the classified rows: counts per clause, Delta's duplicate-match
check and per-file bitmaps of the target rows matched and changed (the DVs and the read
set are built from them on the driver, without another job)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from pyroaring import BitMap64
from pyspark.sql import Observation
from pyspark.sql import functions as F

from txsql.errors import MergeCardinalityError, TxSqlError
from txsql.planner.dml.dv_writes import DIRECT_ROWS, bitmaps_by_crc, crc_paths, file_crc
from txsql.planner.dml.jobs import count_job
from txsql.planner.operations.merge.execute import ACTION, FILE, ROW
from txsql.planner.operations.merge.plan import MergePlan
from txsql.planner.sql.statements import MATCHED, NOT_MATCHED_BY_SOURCE
from txsql.txn.rowlevel.state import total_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

    from txsql.log.actions import AddFile

# Kinds of per-file bitmaps in _grouped_summary().
_ALL, _EFFECTIVE, _CHANGED = -100, -101, -102
_BUCKET_ROWS = 32768  # row indexes per bitmap of Spark's bitmap_construct_agg (4096 bytes)


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
        changed: Per file, the rows updated or deleted (their old versions go into DVs).
    """

    counts: dict[int, int] = field(default_factory=dict)
    num_source_rows: int = 0
    duplicate_matches: int = 0
    distinct_matched_changed: int = 0
    matched: dict[str, BitMap64] = field(default_factory=dict)
    changed: dict[str, BitMap64] = field(default_factory=dict)


def observe_counts(plan: MergePlan, rows: DataFrame) -> tuple[DataFrame, Observation]:
    """``rows`` counting, in whatever job reads them, rows per clause index (``-1``: none)
    and rows with a target row (``"target"``): the write job then counts for the summary."""

    observed = Observation(f"txsql_merge_rows_{uuid.uuid4().hex}")
    counts = [
        F.expr(f"count_if({ACTION} = {i})").alias(str(i))
        for i in [-1, *(c.index for c in plan.clauses)]
    ]
    target = F.expr(f"count_if({FILE} IS NOT NULL)").alias("target")
    return rows.observe(observed, *counts, target), observed


def summarize(
    plan: MergePlan,
    rows: DataFrame,
    joined: DataFrame,
    files: Sequence[AddFile],
    observed: Observation | None = None,
) -> Summary:
    """Counts, the duplicate-match check and per-file bitmaps, in one action, JVM only.

    ``observed`` (from :func:`observe_counts` on ``rows``, after the job that read them)
    holds the counts already; when it shows few target rows (at most ``DIRECT_ROWS``) they
    are collected from ``joined`` (the part of ``rows`` holding every row with a target
    row: the split join's first half) as ``(crc32 of file, row index, clause)``, 20 bytes
    a row, and grouped on the driver: one job, no shuffle, no second half re-evaluated.
    Otherwise, or without counts, Spark groups ``rows`` (:func:`_grouped_summary`).
    """
    crcs = crc_paths(files)
    counted = None if observed is None else {k: int(v) for k, v in observed.get.items()}
    if counted is None or counted["target"] > DIRECT_ROWS or crcs is None:
        return _grouped_summary(plan, rows)

    table = count_job(
        joined.where(F.col(FILE).isNotNull())
        .select(file_crc(FILE).alias("f"), F.col(ROW).alias("r"), F.col(ACTION).alias("a"))
        .toArrow
    )
    keys, ids, actions = (table.column(c).to_numpy(zero_copy_only=False) for c in "fra")
    acting = np.isin(actions, plan.indexes(MATCHED))
    changing = np.isin(actions, _changing(plan))
    out = Summary(counts={int(k): n for k, n in counted.items() if k != "target"})
    out.matched = bitmaps_by_crc(keys, ids, crcs)
    out.changed = bitmaps_by_crc(keys[changing], ids[changing], crcs)
    effective = bitmaps_by_crc(keys[acting], ids[acting], crcs)
    out.distinct_matched_changed = sum(len(b) for b in effective.values())
    out.duplicate_matches = int(acting.sum()) - out.distinct_matched_changed
    return out


def _changing(plan: MergePlan) -> list[int]:
    """Clause indexes whose target rows lose their old version (update, delete)."""
    kinds = ("update", "delete")
    return plan.indexes(MATCHED, kinds) + plan.indexes(NOT_MATCHED_BY_SOURCE, kinds)


def _grouped_summary(plan: MergePlan, rows: DataFrame) -> Summary:
    """:func:`summarize` for many target rows, Spark grouping them.

    Spark groups the rows by (file, bucket of 32768 row indexes, clause) and builds each
    group's bitmap with ``bitmap_construct_agg`` (4096 bytes a group; partial aggregation
    map-side, so only those bitmaps cross the shuffle, a job of its own under AQE). The
    driver turns the buckets into per-file bitmaps of the rows matched, of those a MATCHED
    clause acts on ("effective") and of those changed; a group's row count is its number
    of pairs, so duplicates = effective pairs - distinct effective rows, exact wherever the
    pairs ran. The driver holds bitmaps (at most one bit per target row), never rows.
    """

    effective = plan.indexes(MATCHED)
    changing = _changing(plan)
    grouped = rows.groupBy(
        F.col(FILE).alias("path"),
        F.expr(f"bitmap_bucket_number({ROW} + 1)").alias("bucket"),
        F.col(ACTION).alias("action"),
    ).agg(
        F.count(F.lit(1)).alias("n"),
        F.expr(f"bitmap_construct_agg(bitmap_bit_position({ROW} + 1))").alias("bits"),
    )
    table = count_job(grouped.toArrow)
    out = Summary()
    pairs = 0
    pieces: dict[int, dict[str, list[Any]]] = {_ALL: {}, _EFFECTIVE: {}, _CHANGED: {}}
    columns = [table.column(c).to_pylist() for c in ("path", "bucket", "action", "n", "bits")]
    for path, bucket, action, n, bits in zip(*columns):
        out.counts[action] = out.counts.get(action, 0) + n
        if path is None:  # rows without a target row (inserts): only counted
            continue
        # Bit i (little-endian in each byte) of bucket b is row index (b - 1) * 32768 + i.
        flags = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), bitorder="little")
        ids = np.flatnonzero(flags).astype(np.uint64) + np.uint64((bucket - 1) * _BUCKET_ROWS)
        kinds = [_ALL]
        if action in effective:
            pairs += n
            kinds.append(_EFFECTIVE)
        if action in changing:
            kinds.append(_CHANGED)
        for kind in kinds:
            pieces[kind].setdefault(path, []).append(ids)
    found = {
        kind: {path: _bitmap(np.concatenate(parts)) for path, parts in by_path.items()}
        for kind, by_path in pieces.items()
    }
    out.matched, out.changed = found[_ALL], found[_CHANGED]
    out.distinct_matched_changed = sum(len(b) for b in found[_EFFECTIVE].values())
    out.duplicate_matches = pairs - out.distinct_matched_changed
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


def check_consistent(plan: MergePlan, summary: Summary, new_files: Sequence[AddFile]) -> None:
    """The new files hold exactly the rows the UPDATE and INSERT clauses produced, and the
    rows to mark deleted are exactly the target rows the UPDATE and DELETE clauses changed.

    The counts come from the write job, the bitmaps from another read of the same
    persisted rows, so a difference means the rows changed between two reads (a lost cache
    partition recomputed from a non-deterministic source, say): the MERGE stops before
    anything is committed. (With duplicates allowed, one unconditional DELETE, several
    pairs may delete one row, so only the written rows are compared.)

    Raises:
        TxSqlError: The figures differ.
    """
    problems = []
    written = total_records(new_files)
    produced = sum(summary.counts.get(i, 0) for i in plan.indexes(actions=("update", "insert")))
    if written is not None and written != produced:
        problems.append(
            f"wrote {written} row(s) but its UPDATE and INSERT clauses produced {produced}"
        )
    if not plan.duplicates_allowed:
        changing = sum(summary.counts.get(i, 0) for i in _changing(plan))
        marked = sum(len(rows) for rows in summary.changed.values())
        if marked != changing:
            problems.append(
                f"would mark {marked} row(s) deleted but its UPDATE and DELETE clauses "
                f"changed {changing}"
            )
    if problems:
        raise TxSqlError(
            f"MERGE {'; '.join(problems)}; nothing was committed",
            hint="The source or target changed while the MERGE read it; re-run the MERGE.",
        )


def _bitmap(ids: Any) -> BitMap64:
    bitmap = BitMap64()
    bitmap.update(ids)
    return bitmap
