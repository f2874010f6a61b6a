"""Validate what a transaction read from a table it does not write (Serializable).

A transaction writes one table but may read others. Delta validates only the written
table at commit (its read set against the winners of that table's log); reads of other
tables are just a pinned snapshot, which is snapshot isolation for them and admits write
skew across tables (T1 reads a and writes b, T2 reads b and writes a, both commit).

Under ``Serializable`` txsql also validates every other table the transaction read: each
commit to that table since the transaction pinned it is run through the same checker as a
write (:func:`txsql.txn.conflicts.checker.check_winning_commit`, with its read rules) on a
view that stages no actions, so only the "data we read changed" rules can fire (appends we
should have read, files or rows we read that were deleted). A read-only view is never a
blind append and is checked as ``Serializable``: every added row counts, blind or not.

Atomic for enrolled tables: when the written tables commit through the coordinator and a
read table is enrolled in the same coordinator, the check runs inside the ratification
loop (:mod:`txsql.txn.multitable.group_commit`), before each put of the coordinator record at
position ``P``, over every commit the read table holds once every record below ``P`` is
published. Every commit to that table is such a record, so a ratify at ``P`` that wins
proves nothing was committed to it between the read and ``P``; one that loses publishes
the winner, checks its commits too and tries ``P + 1``.

Limit: a read table that is not enrolled (or enrolled in another coordinator), or a
written table that is not enrolled, is checked just before the commit, not atomically
with it; two transactions committing in the same instant can then both pass.
"""

from __future__ import annotations

from typing import Protocol

from txsql.errors import CommitConflictError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.txn.conflicts.checker import READ_RULES, check_winning_commit
from txsql.txn.conflicts.view import TxnView, build_view
from txsql.txn.hooks import RowPredicateChecker
from txsql.txn.isolation import IsolationLevel
from txsql.txn.readset import ReadSet
from txsql.txn.winner import WinningCommit


class ReadTable(Protocol):
    """What is validated: a transaction's read of one table (a ``Transaction``)."""

    log: DeltaLog
    read_set: ReadSet
    row_predicate_checker: RowPredicateChecker | None

    @property
    def table_root(self) -> str: ...

    def snapshot(self) -> Snapshot | None: ...


NOT_ATOMIC_NOTE = (
    " Only tables enrolled in the written tables' coordinator are validated atomically "
    "with the commit; this one was checked just before it."
)


class ReadCheck:
    """The Serializable check of one read-but-not-written table, run as often as needed:
    each run checks only the commits since the previous one."""

    def __init__(self, txn: ReadTable, table_label: str | None = None) -> None:
        self.txn = txn
        self.label = table_label or txn.table_root
        snapshot = txn.snapshot()
        self._pinned = -1 if snapshot is None else snapshot.version
        self.checked_through = self._pinned
        self._checker_view: TxnView | None = None
        # Set by a group commit that runs this check inside its ratify loop (for the hint).
        self.atomic = False

    def run(self) -> int:
        """Check every commit to the table not checked yet; the number checked.

        Raises:
            CommitConflictError: The subclass of the first rule that fired, its message
                naming the read table.
        """
        snapshot = self.txn.snapshot()
        if snapshot is None or (self.txn.read_set.is_empty and not self.txn.read_set.app_ids):
            return 0
        latest = self.txn.log.latest_version()
        if latest is None or latest <= self.checked_through:
            return 0
        view = self._view()
        first = self.checked_through + 1
        for version in range(first, latest + 1):
            winner = WinningCommit(version, tuple(self.txn.log.read_commit(version)))
            try:
                outcome = check_winning_commit(winner, view, READ_RULES)
            except CommitConflictError as error:
                self._name_read_table(error)
                raise
            view.protocol, view.metadata = outcome.protocol, outcome.metadata
            if view.rows is not None:
                view.rows.advance(winner)
            self.checked_through = version
        return latest - first + 1

    def _view(self) -> TxnView:
        """A view that stages nothing (built once: it advances with each checked commit)."""
        if self._checker_view is not None:
            return self._checker_view
        snap = self.txn.snapshot()
        assert snap is not None
        self._checker_view = build_view(
            self.txn.log.table_root,
            self.txn.log.store.fs,
            snap,
            actions=(),
            read_set=self.txn.read_set,
            isolation=IsolationLevel.SERIALIZABLE,
            blind_append=False,
            protocol=snap.protocol,
            metadata=snap.metadata,
            row_checker=self.txn.row_predicate_checker,
        )
        return self._checker_view

    def _name_read_table(self, error: CommitConflictError) -> None:
        """Say which read table changed: the conflict is not about the table we write."""
        table = self.label
        error.message = (
            f"table {table}, read by this Serializable transaction at version {self._pinned} "
            f"but not written by it, changed: {error.message}"
        )
        error.rule = f"read validation of {table}: {error.rule}"
        error.hint = (
            f"Run the transaction again: it will read {table} as of its newest version. "
            + error.hint
            + ("" if self.atomic else NOT_ATOMIC_NOTE)
        )
        error.args = (error._render(),)


def validate_reads(txn: ReadTable, table_label: str | None = None) -> int:
    """Check every commit to ``txn``'s table since its pinned snapshot against its reads
    (once, now: not atomic with any commit).

    Returns:
        The number of commits checked (0 when the table did not change).

    Raises:
        CommitConflictError: The subclass of the first rule that fired, its message
            naming the read table.
    """
    return ReadCheck(txn, table_label).run()
