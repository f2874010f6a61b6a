"""Commit-time guards every writing statement shares (``delta.appendOnly``).

Kept free of other planner imports so :mod:`txsql.planner.context` can call it on every
commit without an import cycle.
"""

from __future__ import annotations

from txsql.errors import AppendOnlyTableError
from txsql.log import properties
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
