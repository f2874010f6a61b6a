"""Optimistic transactions: pin a read snapshot, record reads, stage actions, commit.

A lost race (the version file exists) is not an error by itself: every winning commit is
checked in version order by :mod:`txsql.txn.conflicts.checker`; if none conflicts the staged
actions are rebased onto the newest version (adopting allow-listed metadata, merging
deletion vectors row by row) and written again. Data files are never rewritten on retry
and commitInfo keeps the original ``readVersion``.

The files the transaction's statements write are recorded in its ledger
(:attr:`Transaction.written`); whatever no commit names when the transaction ends is
deleted (:mod:`txsql.txn.commit.own_files`), so ROLLBACK, a refused statement or a conflict
leaves no orphan behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

from pyroaring import BitMap64

from txsql.errors import TransactionError
from txsql.log.actions import Action, AddFile, Metadata, SetTransaction
from txsql.log.deltalog import DeltaLog
from txsql.log.features import multi_table_enrolled
from txsql.log.predicates import Predicate
from txsql.log.snapshot import Snapshot
from txsql.storage.written import WrittenFiles
from txsql.txn.commit.committer import Committer, LogCommitter
from txsql.txn.commit.loop import DEFAULT_MAX_ATTEMPTS, ENGINE_INFO, CommitLoop, CommitRequest
from txsql.txn.commit.own_files import delete_uncommitted
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.hooks import JoinChecker, RowPredicateChecker
from txsql.txn.isolation import IsolationLevel, choose_isolation, row_level_enabled
from txsql.txn.join_read import record_join
from txsql.txn.multitable.group_commit import GroupCommitter
from txsql.txn.multitable.read_point import ReadPoints, snapshot_at_read_point
from txsql.txn.readset import JoinRead, ReadSet, norm_path
from txsql.txn.result import CommitResult
from txsql.txn.staging import StagedActions, overlay_snapshot

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "ENGINE_INFO",
    "CommitResult",
    "Transaction",
    "commit_together",
]


class Transaction:
    """One optimistic transaction against one table.

    Use it as a context manager: leaving the block without an exception and without an
    explicit commit rolls back (nothing is written), so a failing statement never leaves a
    trace in the log.

    Args:
        log: The table's log.
        isolation: A level requested for this transaction (``BEGIN ISOLATION LEVEL``); it
            can only strengthen the table's ``delta.isolationLevel``.
        max_attempts: Bound on commit attempts (lost races) before giving up.
        row_predicate_checker: Optional hook the Spark layer provides: given a read
            predicate and a winner's added files, does any live row satisfy it? Without
            it, added files whose partition values and stats may match conflict.
    """

    def __init__(
        self,
        log: DeltaLog,
        *,
        isolation: IsolationLevel | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        row_predicate_checker: RowPredicateChecker | None = None,
    ) -> None:
        self.log = log
        self.requested_isolation = isolation
        self.max_attempts = max(1, max_attempts)
        self.row_predicate_checker = row_predicate_checker
        # Set by the planner's MERGE (it knows Spark): do rows join with a MERGE's source?
        self.join_checker: JoinChecker | None = None
        # Shared by the transactions of one statement or BEGIN ... COMMIT: enrolled tables
        # are then pinned at one coordinator position (see txsql.txn.multitable.read_point).
        self.read_points: ReadPoints | None = None
        self.read_set = ReadSet()
        self.txn_id = str(uuid.uuid4())
        self._snapshot: Snapshot | None = None
        self._pinned = False
        self._staged = StagedActions()
        self._state = "open"
        self._logged_paths: frozenset[str] | None = None
        # Files this transaction's writers created (RunContext makes it the current ledger
        # while a statement runs, commit() while it commits).
        self.written = WrittenFiles()

    # --- reads ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot | None:
        """The read snapshot, pinned at the first call (None for a table not created yet)."""
        if not self._pinned:
            if not self.log.exists():
                self._snapshot = None
            elif self.read_points is not None:
                self._snapshot = snapshot_at_read_point(self.read_points, self.log)
            else:
                self._snapshot = self.log.snapshot()
            self._pinned = True
        return self._snapshot

    def current_snapshot(self) -> Snapshot | None:
        """The read snapshot with our staged actions applied (read-your-own-writes)."""
        snapshot = self.snapshot()
        return None if snapshot is None else overlay_snapshot(snapshot, self._staged)

    @property
    def read_version(self) -> int | None:
        snapshot = self.snapshot()
        return snapshot.version if snapshot else None

    @property
    def table_root(self) -> str:
        return self.log.table_root

    def require_table(self, table_root: str) -> None:
        """Refuse a statement on another table: one table per transaction."""
        if table_root.rstrip("/") != self.table_root.rstrip("/"):
            raise TransactionError(
                f"this transaction writes {self.table_root}; it cannot also use {table_root}",
                hint="Commit or roll back first; a transaction covers one table.",
            )

    def record_scan(
        self,
        predicate: Predicate,
        files: Sequence[AddFile],
        matched_rows: Mapping[str, BitMap64] | None = None,
    ) -> None:
        """Record a scan: its predicate, the files read after pruning, matched rows.

        Args:
            predicate: The scan's filter (``TRUE`` for an unfiltered scan).
            files: The files the scan read (from :meth:`snapshot` or
                :meth:`current_snapshot`); our own staged new files are ignored.
            matched_rows: Physical row indexes the statement matched/modified per file
                path; files read but absent matched nothing. None: rows unknown, so
                these files are checked at the file level.
        """
        self._require_open()
        self.snapshot()
        logged = [f for f in files if not self._is_own_new_file(f)]
        self.read_set.record_scan(predicate, logged, matched_rows)

    def record_join(
        self, join: JoinRead, matched_rows: Mapping[str, BitMap64] | None = None
    ) -> None:
        """Record a MERGE's read of the target rows joining its source (see joinread).

        Args:
            join: The ON condition, the source handle and the files read.
            matched_rows: Rows the MERGE matched or changed per file; None: unknown.
        """
        self._require_open()
        self.snapshot()
        logged = tuple(f for f in join.files if not self._is_own_new_file(f))
        record_join(self.read_set, replace(join, files=logged), matched_rows)

    def mark_read_whole_table(self) -> None:
        """A read that cannot be scoped: every winner's change conflicts (file level)."""
        self.snapshot()
        self.read_set.read_whole_table = True

    def mark_files_read(self, paths: Sequence[str]) -> None:
        """Files read without a recorded predicate (treated as read with ``TRUE``)."""
        self.snapshot()
        self.read_set.record_paths(paths)

    def read_metadata(self) -> Metadata | None:
        """The schema and properties as this transaction sees them (recorded as read)."""
        snapshot = self.current_snapshot()
        self.read_set.metadata_read = True
        return snapshot.metadata if snapshot else None

    def app_version(self, app_id: str) -> int | None:
        """The last committed version of ``app_id`` (exactly-once writers); recorded as read."""
        snapshot = self.current_snapshot()
        self.read_set.app_ids.add(app_id)
        return snapshot.app_versions.get(app_id) if snapshot else None

    def set_app_version(self, app_id: str, version: int) -> None:
        """Stage ``txn(app_id, version)``; the commit is skipped if it is not newer."""
        self._require_open()
        self.app_version(app_id)
        self._staged.stage([SetTransaction(app_id, version)])

    def _is_own_new_file(self, f: AddFile) -> bool:
        """A file we staged that is not in the log: no winner can touch it."""
        path = norm_path(f.path)
        if path not in self._staged.adds:
            return False
        if self._logged_paths is None:
            snapshot = self.snapshot()
            files = snapshot.files if snapshot else ()
            self._logged_paths = frozenset(norm_path(s.path) for s in files)
        return path not in self._logged_paths

    # --- writes --------------------------------------------------------------------

    def stage(self, actions: Sequence[Action]) -> None:
        """Add actions to the commit (a later remove cancels our own staged add)."""
        self._require_open()
        self.snapshot()
        self._staged.stage(actions)

    @property
    def staged(self) -> tuple[Action, ...]:
        return self._staged.actions()

    @property
    def row_level(self) -> bool:
        """Whether conflicts are checked row by row (``txsql.rowLevelConcurrency``)."""
        snapshot = self.snapshot()
        return snapshot is not None and row_level_enabled(snapshot.configuration)

    @property
    def isolation_level(self) -> IsolationLevel:
        """The level a commit of the staged actions would be checked under."""
        snapshot = self.snapshot()
        conf = snapshot.configuration if snapshot else {}
        return choose_isolation(self._staged.actions(), conf, self.requested_isolation)

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        *,
        reads: Sequence[ReadCheck] = (),
    ) -> CommitResult:
        """Write the staged actions as the next version, checking and rebasing on races.

        ``reads`` validate tables read but not written (Serializable): atomically with
        the commit for tables enrolled in this table's coordinator when this table is
        enrolled (see :mod:`txsql.txn.commit.read_validation`), otherwise just before it.

        Raises:
            CommitConflictError: a winning commit conflicts (a subclass says which rule).
            CommitRetriesExceededError: more than ``max_attempts`` lost races.
            TransactionError: the transaction is not open, or a new table lacks metadata.
        """
        loop = self.commit_loop(operation, parameters, metrics)
        committer: Committer = (
            GroupCommitter([self.table_root], reads) if self.enrolled else LogCommitter(reads)
        )
        return commit_through(committer, [(self, loop)])[0]

    @property
    def enrolled(self) -> bool:
        """Whether commits go through the multi-table coordinator (the read snapshot has
        ``txsql.multiTableTransactions = true``; enrolling itself is a plain commit)."""
        snapshot = self.snapshot()
        return snapshot is not None and multi_table_enrolled(snapshot.configuration)

    def commit_loop(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> CommitLoop:
        """The commit loop that will write the staged actions (not run yet)."""
        self._require_open()
        request = CommitRequest(
            log=self.log,
            snapshot=self.snapshot(),
            staged=self._staged,
            txn_id=self.txn_id,
            requested_isolation=self.requested_isolation,
            read_set=self.read_set,
            row_predicate_checker=self.row_predicate_checker,
            join_checker=self.join_checker,
            max_attempts=self.max_attempts,
            ledger=self.written,
        )
        return CommitLoop(request, operation, parameters or {}, metrics or {})

    def settle_failure(self, outcome_unknown: bool) -> None:
        self._state = "failed"
        if outcome_unknown:
            self._state = "unknown"
            self.written.take(close=True)  # it may have landed: VACUUM decides later
        else:
            self._delete_written()

    def settle_success(self, result: CommitResult) -> None:
        self._state = "skipped" if result.skipped else "committed"
        # Files written but not in the commit: adds a later statement cancelled, DV files
        # a later DV or a rebase replaced, everything when the commit was skipped.
        self._delete_written(result.actions)

    def settle_prepared(self) -> None:
        """PREPARE TRANSACTION recorded the staged actions and took the files: they belong
        to the prepared record now (COMMIT / ROLLBACK PREPARED decide)."""
        self._state = "prepared"
        self.written.take(close=True)

    def rollback(self) -> None:
        """Drop the staged actions and delete the files written for them; nothing was
        written to the log."""
        self._staged.clear()
        self._state = "rolled back"
        self._delete_written()

    def abort(self) -> None:
        """A statement of the transaction failed: drop everything staged (and the files
        written for it), refuse a commit.

        Only :meth:`rollback` (which is then a no-op on the log) is still allowed.
        """
        self._staged.clear()
        self._state = "aborted"
        self._delete_written()

    def _delete_written(self, committed: Sequence[Action] = ()) -> None:
        written = self.written.take(close=True)
        if written and self._pinned:  # unpinned: no read version bounds the log check
            delete_uncommitted(self.log, written, self.read_version, committed)

    @property
    def state(self) -> str:
        """``open``, ``committed``, ``skipped``, ``prepared``, ``rolled back``, ``aborted``,
        ``failed`` or ``unknown`` (the commit failed during its put: it may have landed)."""
        return self._state

    @property
    def may_have_committed(self) -> bool:
        """Whether a commit of this transaction is or may be in the log: its files must
        then stay (VACUUM removes them later if nothing names them)."""
        return self._state in ("committed", "skipped", "unknown", "prepared")

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state == "open":
            self.rollback()

    @property
    def staged_state(self) -> StagedActions:
        """The staged actions by kind (a commit loop rebases its own copy, never these)."""
        return self._staged

    def _require_open(self) -> None:
        if self._state != "open":
            raise TransactionError(
                f"this transaction is already {self._state}", hint="Start a new transaction."
            )


def commit_together(
    entries: Sequence[tuple[Transaction, CommitLoop]],
    labels: Sequence[str],
    *,
    reads: Sequence[ReadCheck] = (),
) -> list[CommitResult]:
    """Commit several transactions (one per table) through the coordinator, all or none.

    ``labels`` name the tables in errors; ``reads`` validate tables read but not written
    (see :class:`~txsql.txn.multitable.group_commit.GroupCommitter`).
    """
    return commit_through(GroupCommitter(labels, reads), entries)


def commit_through(
    committer: Committer, entries: Sequence[tuple[Transaction, CommitLoop]]
) -> list[CommitResult]:
    """Land each transaction's loop through ``committer`` and settle every transaction:
    committed, or failed (its files deleted unless the outcome is unknown)."""
    loops = [loop for _, loop in entries]
    try:
        results = committer.commit(loops)
    except BaseException:
        unknown = any(loop.outcome_unknown for loop in loops)
        for txn, _ in entries:
            txn.settle_failure(unknown)
        raise
    for (txn, _), result in zip(entries, results, strict=True):
        txn.settle_success(result)
    return results
