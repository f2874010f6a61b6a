"""MERGE into a small target in ONE Spark query: nothing persisted but the source.

When the target files hold at most ``_DEFAULT_MAX_ROWS`` rows, nothing in the MERGE needs the
joined rows twice, so they are not persisted (a cache costs Spark a job of its own to fill,
and a second one to read back for the summary). One write job does it all:

* the new rows: the updated ones from target x source (the classify projection of
  :mod:`~txsql.planner.operations.merge.execute`), plus, with NOT MATCHED clauses, the
  source rows no live target row matches (source left-anti-join target: Spark reads the
  small target a second time and broadcasts it; ON is deterministic, so both joins agree);
* observed on the way (``DataFrame.observe``, no job of its own): the rows per clause, and
  the keys ``crc32(file) << 32 | row index`` of the matched target rows, as two sets
  (rows a MATCHED clause acts on, rows it does not). Sets, so the driver holds at most
  one key per target row, at most ``DIRECT_ROWS``, whatever the duplicate matches; the
  duplicate check compares the acting pairs counted with the distinct acting keys.

With few rows on both sides (target and source together at most
:data:`~txsql.engine.write.ONE_TASK_ROWS`) the job is one task, which writes one file per
partition value instead of one per task and value, and finishes sooner.

The observed counts, keys and written files come from one pass, so the written rows, the
rows marked deleted and the conflict check's matched rows are the same rows even for
non-deterministic conditions or values. Only the source is persisted (it is read by the
join, the anti-join and the conflict check).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql import Observation
from pyspark.sql import functions as F

from txsql.engine.write import in_one_task
from txsql.log.actions import AddFile
from txsql.planner.dml.dv_writes import DIRECT_ROWS, bitmaps_by_crc, crc_paths
from txsql.planner.operations.merge import execute as mx
from txsql.planner.operations.merge.plan import MATCHED, NOT_MATCHED, MergePlan
from txsql.planner.operations.merge.summary import Summary
from txsql.txn.rowlevel.state import total_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

SMALL_TARGET_ROWS_ENV = "TXSQL_MERGE_SMALL_TARGET_MAX_ROWS"
"""Targets whose files hold at most this many rows (default ``_DEFAULT_MAX_ROWS``, never
above ``DIRECT_ROWS``) run as one query; tests set it to 0 to run the persisted join."""
# The anti-join scans the target a second time, so big targets keep the persisted join
# (figures: benchmarks/README.md, "MERGE into a small target").
_DEFAULT_MAX_ROWS = 100_000
_ROW_BITS = 32  # a key is crc32(file) << 32 | row index
_ACTING, _IDLE, _COUNTS = "acting", "idle", "counts"  # observed metrics


def small_target(plan: MergePlan, files: Sequence[AddFile], change_feed: bool) -> bool:
    """Whether the MERGE runs as one query: no NOT MATCHED BY SOURCE clause (the join keeps
    only matched target rows), a deterministic ON (the anti-join evaluates it again), no
    change data feed (its rows are read back from the persisted join), and target files
    with at most ``_DEFAULT_MAX_ROWS`` rows (:data:`SMALL_TARGET_ROWS_ENV`) whose keys are unique
    (distinct path CRCs, known row counts)."""
    if plan.join not in ("inner", "right", "insert_only") or not plan.on_deterministic:
        return False
    if change_feed or crc_paths(files) is None:
        return False
    total = total_records(files)
    limit = int(os.environ.get(SMALL_TARGET_ROWS_ENV, _DEFAULT_MAX_ROWS))
    return total is not None and total <= min(limit, DIRECT_ROWS)


def run_small_target(
    plan: MergePlan,
    target: DataFrame,
    source: DataFrame,
    num_source: int,
    files: Sequence[AddFile],
    column_types: dict[str, str],
    drop_deleted: Callable[[DataFrame], DataFrame] | None,
    write: Callable[[DataFrame], list[AddFile]],
    written: list[AddFile],
) -> Summary:
    """Run the MERGE's Spark side in one job; return what it observed.

    Args:
        plan: The resolved MERGE (:func:`small_target` holds).
        target: The target scan with row ids, ignoring DVs when ``drop_deleted`` is given.
        source: The persisted source from :func:`~.execute.with_source_marker`.
        num_source: Its rows.
        files: The target files scanned.
        column_types: Target column -> Spark SQL type.
        drop_deleted: Drops the joined rows of DV-deleted target rows (see ``classify``).
        write: Writes the new rows among classified rows (one job), returns the files.
        written: Receives the files written, as soon as they exist (for cleanup).
    """
    crcs = crc_paths(files)
    assert crcs is not None  # small_target() checked
    parts: list[DataFrame] = []
    matched_seen = _observation("matched") if plan.indexes(MATCHED) else None
    if matched_seen is not None:
        joined = mx.classify(
            plan, target, source, column_types, matched_only=True, drop_deleted=drop_deleted
        )
        parts.append(joined.observe(matched_seen, *_matched_metrics(plan)))
    inserts_seen = _observation("inserts") if plan.indexes(NOT_MATCHED) else None
    if inserts_seen is not None:
        rest = mx.unmatched_by_anti_join(plan, target, source, column_types, drop_deleted)
        parts.append(rest.observe(inserts_seen, _counts(plan.indexes(NOT_MATCHED))))
    rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    rows = in_one_task(rows, (total_records(files) or 0) + num_source)
    if plan.indexes(actions=("update", "insert")):
        written += write(rows)
    else:  # DELETE only: nothing to write, the job only observes
        mx.run_rows(rows)
    summary = Summary()
    if inserts_seen is not None:
        summary.counts.update(_counted(inserts_seen.get, plan.indexes(NOT_MATCHED)))
    if matched_seen is not None:
        _read_matched(plan, matched_seen.get, crcs, summary)
    return summary


def _observation(what: str) -> Observation:
    return Observation(f"txsql_merge_{what}_{uuid.uuid4().hex}")


def _counts(indexes: Sequence[int]) -> Any:
    """Rows per clause index, as ONE observed array (a Column per count cost py4j calls)."""
    counted = ", ".join(f"count_if({mx.ACTION} = {i})" for i in indexes)
    return F.expr(f"array({counted})").alias(_COUNTS)


def _matched_metrics(plan: MergePlan) -> list[Any]:
    """Rows per MATCHED clause (``-1``: none applies) and the two key sets."""
    key = f"(shiftleft(crc32(cast({mx.FILE} AS BINARY)), {_ROW_BITS}) | {mx.ROW})"
    return [
        _counts([-1, *plan.indexes(MATCHED)]),
        F.expr(f"collect_set(CASE WHEN {mx.ACTION} >= 0 THEN {key} END)").alias(_ACTING),
        F.expr(f"collect_set(CASE WHEN {mx.ACTION} < 0 THEN {key} END)").alias(_IDLE),
    ]


def _counted(metrics: dict[str, Any], indexes: Sequence[int]) -> dict[int, int]:
    return {i: int(n) for i, n in zip(indexes, metrics[_COUNTS], strict=True)}


def _read_matched(
    plan: MergePlan, metrics: dict[str, Any], crcs: dict[int, str], summary: Summary
) -> None:
    """Fill ``summary`` from the matched rows' observed counts and key sets.

    Every MATCHED clause updates or deletes, so the rows a MATCHED clause acts on are the
    rows changed (their old versions go into DVs) and Delta's "effective" matches.
    """
    counts = _counted(metrics, [-1, *plan.indexes(MATCHED)])
    summary.counts.update(counts)
    acting = np.asarray(metrics[_ACTING], dtype=np.int64).view(np.uint64)
    idle = np.asarray(metrics[_IDLE], dtype=np.int64).view(np.uint64)
    summary.changed = _bitmaps(acting, crcs)
    summary.matched = _bitmaps(np.concatenate([acting, idle]), crcs)
    summary.distinct_matched_changed = len(acting)
    pairs = sum(n for i, n in counts.items() if i >= 0)
    summary.duplicate_matches = pairs - len(acting)


def _bitmaps(keys: np.ndarray, crcs: dict[int, str]) -> dict[str, Any]:
    files = (keys >> np.uint64(_ROW_BITS)).astype(np.int64)
    rows = keys & np.uint64((1 << _ROW_BITS) - 1)
    return bitmaps_by_crc(files, rows, crcs)
