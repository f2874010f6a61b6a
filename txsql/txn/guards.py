"""Commit-time guards every writing statement shares (``delta.appendOnly``, and stable row
ids under ``delta.enableRowTracking``).

Kept free of other planner imports so :mod:`txsql.planner.context` can call it on every
commit without an import cycle.
"""

from __future__ import annotations

from txsql.errors import AppendOnlyTableError, UnsupportedFeatureError
from txsql.log import properties, row_tracking
from txsql.log.actions import RemoveFile
from txsql.txn.transaction import Transaction


def check_append_only(txn: Transaction, operation: str) -> None:
    """Refuse to commit removes that change data on an append-only table.

    Delta's rule (``DeltaLog.assertRemovable`` in ``prepareCommit``): any ``remove`` with
    ``dataChange=true`` is forbidden while ``delta.appendOnly`` is true. Rearranging files
    without changing data (OPTIMIZE, REORG) stays allowed. Both the version read and the
    staged metadata count: a RESTORE to a version before the property was set is still
    refused, and so is a removal after ``SET TBLPROPERTIES`` in the same transaction.

    Raises:
        AppendOnlyTableError: the staged actions remove data from an append-only table.
    """
    removes = [a for a in txn.staged if isinstance(a, RemoveFile) and a.data_change]
    if not removes:
        return
    read, current = txn.snapshot(), txn.current_snapshot()
    confs = [s.configuration for s in (read, current) if s is not None]
    if not any(properties.append_only(conf) for conf in confs):
        return
    raise AppendOnlyTableError(
        f"{operation} cannot run on {txn.table_root}: the table is append-only "
        f"(delta.appendOnly = true) and this would remove data from {len(removes)} file(s)"
    )


# Operations whose new files hold only new rows (fresh ids are right for them) even when
# they also remove files: an overwrite (its copies of kept rows carry their ids), or a table
# replaced by a query.
NEW_ROWS_ONLY = frozenset({"WRITE", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"})
# Operations that copy rows and write each copy's stable row id and commit version into
# the table's materialized columns (scan_snapshot(with_lineage=True) to write_data_files).
KEEPS_ROW_IDS = frozenset({"UPDATE", "MERGE", "DELETE", "OPTIMIZE", "REORG"})


def check_row_ids_kept(txn: Transaction, operation: str) -> None:
    """Refuse a commit that would move rows of a ``delta.enableRowTracking`` table into new
    files without their stable row ids: every statement that copies rows writes them into
    the materialized columns (:data:`KEEPS_ROW_IDS`); any other would silently give the
    rows new ids.

    Raises:
        UnsupportedFeatureError: the staged actions copy rows of such a table.
    """
    snapshot = txn.current_snapshot()
    if snapshot is None or not row_tracking.enabled(snapshot.configuration):
        return
    if operation in NEW_ROWS_ONLY | KEEPS_ROW_IDS or not row_tracking.copies_rows(txn.staged):
        return
    raise UnsupportedFeatureError(
        f"{operation} cannot run on {txn.table_root}: it moves existing rows into new files, "
        "and on a table with delta.enableRowTracking = true their stable row ids must be "
        "kept in materialized columns, which this statement does not write",
        hint="Run this statement with Delta Spark or Databricks, or stop keeping stable row "
        "ids: ALTER TABLE ... SET TBLPROPERTIES ('delta.enableRowTracking' = 'false') (new "
        "rows still get row ids).",
    )
