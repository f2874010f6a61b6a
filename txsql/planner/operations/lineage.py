"""Row lineage: every version that changed the rows a predicate picks, found by row id.

On a table keeping stable row ids (``delta.enableRowTracking``) a row's
``_metadata.row_commit_version`` is the version that last changed it. The row as it was
just before is the row of the same id at that version minus one, whose own commit version
says where the change before happened, and so on back to the version that inserted it
(where the id did not exist yet). Each step reads one older version, for all the rows it
follows at once, so the cost is one scan per distinct change version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import functions as F

from txsql.engine.spark_errors import spark_error_message
from txsql.errors import SqlError, TxSqlError
from txsql.log import row_tracking
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.row_lineage import lineage_frame, refuse_missing
from txsql.planner.operations.describe import history_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.log.deltalog import DeltaLog

MAX_ROWS = 1_000
"""Rows a lineage follows at most (the first by row id)."""
COLUMNS = ["row_id", "version", "timestamp", "operation", "before", "after"]


@dataclass(frozen=True)
class _Row:
    """One row as of a version: its commit version and its values."""

    commit_version: int
    values: dict[str, Any]


def row_lineage(
    ctx: RunContext, log: DeltaLog, snapshot: Snapshot, display: str, where: str | None
) -> pd.DataFrame:
    """One line per (row, version that changed it), newest first per row: the version,
    its time and operation, and the row's values before and after (None before an insert).

    Raises:
        UnsupportedFeatureError: the table keeps no row ids.
        SqlError: the predicate does not compile against the table.
    """
    frame = lineage_frame(ctx.spark, snapshot)
    if frame is None:
        refuse_missing([display])
    assert frame is not None
    try:
        picked = frame.where(where) if where else frame
        following = _rows(picked.orderBy("_metadata.row_id").limit(MAX_ROWS))
    except Exception as exc:  # Spark's analysis error: the predicate does not compile
        raise SqlError(
            f"lineage of {display}: cannot evaluate WHERE {where}: {spark_error_message(exc)}",
            hint="Write the predicate in Spark SQL over the table's columns, e.g. id = 7.",
        ) from None
    commits = {r["version"]: r for r in history_rows(log)}
    lines: list[dict[str, Any]] = []
    while following:
        version = max(row.commit_version for row in following.values())
        at = {rid: row for rid, row in following.items() if row.commit_version == version}
        before = _before(ctx, log, version, list(at))
        for rid, row in at.items():
            commit = commits.get(version, {})
            previous = before.get(rid)
            lines.append(
                {
                    "row_id": rid,
                    "version": version,
                    "timestamp": commit.get("timestamp"),
                    "operation": commit.get("operation"),
                    "before": None if previous is None else previous.values,
                    "after": row.values,
                }
            )
            if previous is None or previous.commit_version >= version:
                del following[rid]  # inserted here (or ids began here): the row's start
            else:
                following[rid] = previous
    lines.sort(key=lambda line: (line["row_id"], -line["version"]))
    return pd.DataFrame(lines, columns=COLUMNS)


def _before(ctx: RunContext, log: DeltaLog, version: int, ids: list[int]) -> dict[int, _Row]:
    """The rows of ``ids`` at ``version - 1`` (none: they did not exist, or the table kept
    no ids then, or that version can no longer be read)."""
    if version == 0:
        return {}
    try:
        older = log.snapshot(version - 1)
    except TxSqlError:
        return {}  # log cleanup removed it: the history starts here
    if row_tracking.materialized_columns(older.configuration) is None:
        return {}
    frame = lineage_frame(ctx.spark, older)
    if frame is None:
        return {}
    return _rows(frame.where(F.col("_metadata.row_id").isin(ids)))


def _rows(df: DataFrame) -> dict[int, _Row]:
    found = {}
    for r in df.collect():
        values = r.asDict()
        meta = values.pop("_metadata")
        found[int(meta["row_id"])] = _Row(int(meta["row_commit_version"]), values)
    return found
