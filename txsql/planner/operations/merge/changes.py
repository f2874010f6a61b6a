"""MERGE on a change-data-feed table: its ``insert``, ``delete`` and update image rows.

Called with the persisted classified rows (:mod:`.execute`), so the change rows are the very
rows the MERGE wrote and marked deleted. As Delta does, once a MERGE updates or deletes
anything its inserts go into the change files too (a version with change files is read
from them alone); an insert-only MERGE writes none and readers derive its inserts from
its ``add`` actions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from txsql.engine.changes import CHANGE_TYPE, DELETE, INSERT, POSTIMAGE, PREIMAGE
from txsql.engine.names import fresh_names
from txsql.engine.scan import scan_snapshot, snapshot_row_ids
from txsql.engine.schema import quote
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.changes import StatementChanges
from txsql.planner.dml.conform import conform_to_schema
from txsql.planner.dml.dv_writes import DeletionOutcome
from txsql.planner.operations.merge import execute as mx
from txsql.planner.operations.merge.plan import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    MergePlan,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def merge_changes(
    ctx: RunContext,
    snapshot: Snapshot,
    plan: MergePlan,
    rows: DataFrame,
    outcome: DeletionOutcome,
    table: str,
) -> StatementChanges:
    """Write the MERGE's change files (call only when it updated or deleted rows)."""
    changes = StatementChanges()
    parts = [_old_rows(ctx, snapshot, plan, rows, outcome), *_new_rows(snapshot, plan, rows, table)]
    changes.write(ctx, snapshot, [p for p in parts if p is not None])
    return changes


def _indexes(plan: MergePlan, action: str) -> list[int]:
    return plan.indexes(MATCHED, (action,)) + plan.indexes(NOT_MATCHED_BY_SOURCE, (action,))


def _old_rows(
    ctx: RunContext,
    snapshot: Snapshot,
    plan: MergePlan,
    rows: DataFrame,
    outcome: DeletionOutcome,
) -> DataFrame | None:
    """Old versions of updated rows (preimages) and deleted rows, read from their files."""
    if not outcome.touched_files:
        return None
    kind = (
        F.when(F.col(mx.ACTION).isin(_indexes(plan, "update")), F.lit(PREIMAGE))
        .when(F.col(mx.ACTION).isin(_indexes(plan, "delete")), F.lit(DELETE))
        .otherwise(F.lit(None))
    )
    file_column, row_column = snapshot_row_ids(snapshot)
    id_file, id_row, id_kind = fresh_names(
        ["_cdc_file", "_cdc_row", "_cdc_kind"], [*plan.target_columns, file_column, row_column]
    )
    # One row per changed target row (an unconditional DELETE may list a row twice).
    ids = (
        rows.select(F.col(mx.FILE).alias(id_file), F.col(mx.ROW).alias(id_row), kind.alias(id_kind))
        .where(F.col(id_kind).isNotNull())
        .distinct()
    )
    files = tuple(replace(f, deletion_vector=None) for f in outcome.touched_files)
    # With lineage (a table tracking rows) the old rows' committed ids and versions too.
    scan = scan_snapshot(
        ctx.spark, replace(snapshot, files=files), with_row_ids=True, with_lineage=True
    )
    on = (scan[quote(file_column)] == ids[quote(id_file)]) & (
        scan[quote(row_column)] == ids[quote(id_row)]
    )
    joined = scan.join(ids, on, "inner")
    return joined.select(
        *[scan[quote(c)] for c in plan.target_columns],
        ids[quote(id_kind)].alias(CHANGE_TYPE),
        *[scan[quote(c)] for c in plan.lineage],
    )


def _new_rows(snapshot: Snapshot, plan: MergePlan, rows: DataFrame, table: str) -> list[DataFrame]:
    """New versions of updated rows (postimages) and inserted rows, cast like the writes.

    With lineage, a postimage keeps its row's id and both leave the version NULL (this
    commit's), as the data files store them; an insert has no id before the commit.
    """
    out = []
    inserts = plan.indexes(NOT_MATCHED, ("insert",))
    for indexes, change_type in ((_indexes(plan, "update"), POSTIMAGE), (inserts, INSERT)):
        if not indexes:
            continue
        ids = []
        if plan.lineage:
            row_id, version = plan.lineage
            ids = [F.col(mx.KEPT_ROW_ID).alias(row_id), F.lit(None).cast("long").alias(version)]
        values = rows.filter(F.col(mx.ACTION).isin(indexes)).select(
            *[F.col(quote(c)) for c in plan.target_columns], *ids
        )
        fitted = conform_to_schema(
            values, snapshot.schema_json, plan.target_columns, table, keep=plan.lineage
        )
        out.append(fitted.withColumn(CHANGE_TYPE, F.lit(change_type)))
    return out
