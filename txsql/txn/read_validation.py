"""Validate what a transaction read from a table it does not write (Serializable).

A transaction writes one table but may read others. Delta validates only the written
table at commit (its read set against the winners of that table's log); reads of other
tables are just a pinned snapshot, which is snapshot isolation for them and admits write
skew across tables (T1 reads a and writes b, T2 reads b and writes a, both commit).

Under ``Serializable`` txsql also validates every other table the transaction read: each
commit to that table since the transaction pinned it is run through the same checker as a
write (:func:`txsql.txn.conflicts.check_winning_commit`) with a view that stages no
actions, so only the "data we read changed" rules can fire (appends we should have read,
files or rows we read that were deleted). A read-only view is never a blind append and is
checked as ``Serializable``: every added row counts, blind or not.

Limit: the validation runs just before the written table's commit, not atomically with
it; two transactions committing in the same instant can both pass. Interleaved sessions
(BEGIN ... COMMIT in notebooks, ``Session.begin()``) always see each other's commits.
"""

from __future__ import annotations

from txsql.errors import CommitConflictError
from txsql.log import properties
from txsql.log.schema import parse_schema
from txsql.txn.conflicts import TxnView, check_winning_commit
from txsql.txn.isolation import IsolationLevel, row_level_enabled
from txsql.txn.readset import norm_path
from txsql.txn.rowlevel import RowLevelState
from txsql.txn.transaction import Transaction
from txsql.txn.winner import WinningCommit


def validate_reads(txn: Transaction, table_label: str | None = None) -> int:
    """Check every commit to ``txn``'s table since its pinned snapshot against its reads.

    Args:
        txn: A transaction that read the table and stages nothing for it.
        table_label: How to name the table in an error (default: its location).

    Returns:
        The number of commits checked (0 when the table did not change).

    Raises:
        CommitConflictError: The subclass of the first rule that fired, its message
            naming the read table.
    """
    snapshot = txn.snapshot()
    if snapshot is None or (txn.read_set.is_empty and not txn.read_set.app_ids):
        return 0
    latest = txn.log.latest_version()
    if latest is None or latest <= snapshot.version:
        return 0
    conf = snapshot.configuration
    rows = None
    if row_level_enabled(conf):
        files = {norm_path(f.path): f for f in snapshot.files}
        rows = RowLevelState(txn.log.table_root, txn.log.store.fs, files, {}, {})
    view = TxnView(
        actions=(),
        read_set=txn.read_set,
        isolation=IsolationLevel.SERIALIZABLE,
        blind_append=False,
        schema=parse_schema(snapshot.metadata.schema_string),
        partition_columns=snapshot.metadata.partition_columns,
        protocol=snapshot.protocol,
        metadata=snapshot.metadata,
        rows=rows,
        row_checker=txn.row_predicate_checker,
        column_mapping_mode=properties.column_mapping_mode(conf),
    )
    for version in range(snapshot.version + 1, latest + 1):
        winner = WinningCommit(version, tuple(txn.log.read_commit(version)))
        try:
            outcome = check_winning_commit(winner, view)
        except CommitConflictError as error:
            _name_read_table(error, table_label or txn.table_root, snapshot.version)
            raise
        view.protocol, view.metadata = outcome.protocol, outcome.metadata
        if rows is not None:
            rows.advance(winner)
    return latest - snapshot.version


def _name_read_table(error: CommitConflictError, table: str, pinned: int) -> None:
    """Say which read table changed: the conflict is not about the table we write."""
    error.message = (
        f"table {table}, read by this Serializable transaction at version {pinned} but not "
        f"written by it, changed: {error.message}"
    )
    error.rule = f"read validation of {table}: {error.rule}"
    error.hint = (
        f"Run the transaction again: it will read {table} as of its newest version. " + error.hint
    )
    error.args = (error._render(),)
