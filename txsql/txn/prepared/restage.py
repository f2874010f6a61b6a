"""One participant of a prepared transaction at COMMIT PREPARED: its prepared actions,
re-checked against the commits made since PREPARE and staged at its table's next version.

The row-level read set does not outlive the preparing process, so the check is the one
conflict checker with its prepared rules (:data:`~txsql.txn.conflicts.checker.PREPARED_RULES`):
file level and conservative, the participant counts as having read its whole table. A
blind append read nothing; only a protocol, schema or property change, the same
exactly-once app id or metadata domain, or a dropped table conflicts with it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import NoReturn

from txsql.errors import CommitConflictError, MetadataChangedError
from txsql.log import row_tracking
from txsql.log.actions import Action, CommitInfo, SetTransaction
from txsql.log.codec import decode_commit, encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.storage.logstore import log_store_for
from txsql.txn.commit.own_files import require_added_files
from txsql.txn.commit.row_ids import assign_row_ids
from txsql.txn.conflicts.checker import PREPARED_RULES, check_winning_commit
from txsql.txn.conflicts.view import TxnView, build_view
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable.coordinator import Participant, now_ms
from txsql.txn.multitable.members import name_table
from txsql.txn.multitable.publish import staged_name
from txsql.txn.prepared.records import PreparedParticipant
from txsql.txn.readset import ReadSet
from txsql.txn.winner import WinningCommit

logger = logging.getLogger(__name__)


class DecidedElsewhere(Exception):
    """Another process decided: a participant's log holds this transaction's commit, or
    its prepared actions were deleted (after a decision, they are)."""


class Restager:
    """One participant at COMMIT PREPARED: its prepared actions, re-checked against the
    commits since it was prepared and staged at its table's next version."""

    def __init__(self, p: PreparedParticipant) -> None:
        self.p = p
        self.store = log_store_for(p.table_root)
        self.log = DeltaLog(self.store)
        try:
            self.actions: tuple[Action, ...] = tuple(
                decode_commit(self.store.read_log_file(p.actions_file))
            )
        except FileNotFoundError:
            if self._replaced():  # DROP TABLE took the prepared actions with it
                kind = MetadataChangedError
                self._conflict(kind, -1, None, "the table was dropped since it was prepared")
            # A decision elsewhere deleted them (committed, or rolled back meanwhile);
            # the caller looks for it, and reports a damaged table if there is none.
            raise DecidedElsewhere(f"the prepared actions of {p.label} are gone") from None
        self.info = next(a for a in self.actions if isinstance(a, CommitInfo))
        self.checked_through = p.version - 1  # PREPARE checked everything before
        self.last_timestamp = 0
        self.staged: Participant | None = None
        self.superseded: list[str] = []

    def _replaced(self) -> bool:
        if self.log.latest_version() is None:
            return True
        return self.log.snapshot().metadata.id != self.p.table_id

    def restage_if_stale(self) -> None:
        latest = self.log.latest_version()
        newest = -1 if latest is None else latest
        if self.staged is not None and self.staged.version == newest + 1:
            return
        if newest < self.checked_through:
            self._conflict(
                MetadataChangedError, -1, None, "the table was dropped or replaced since"
            )
        versions = range(self.checked_through + 1, newest + 1)
        if versions:
            current = self.log.snapshot(newest)
            view = self._view(current)
            for v, actions in zip(versions, self.log.read_commits(versions), strict=True):
                self._check(WinningCommit(v, tuple(actions)), view)
            if current.metadata.id != self.p.table_id:
                kind = MetadataChangedError
                self._conflict(kind, newest, None, "the table was dropped and created again")
        self.checked_through = newest
        if self.staged is not None and self.staged.staged_commit is not None:
            self.superseded.append(self.staged.staged_commit)
        written = self._rebased(self.log.snapshot(newest) if newest >= 0 else None)
        require_added_files(self.log, written, self.info.operation or "COMMIT PREPARED")
        name = staged_name(newest + 1, str(uuid.uuid4()))
        self.store.fs.write_if_absent(self.store.log_path(name), encode_commit(written))
        self.staged = Participant(
            self.p.table_root, self.p.table_id, newest + 1, name, self.p.txn_id
        )

    def _rebased(self, current: Snapshot | None) -> tuple[Action, ...]:
        """The prepared actions with a fresh commitInfo (timestamps after the winners')
        and, on a row-tracking table, row ids above ``current``'s high-water mark for the
        version they land on (PREPARE stored them without: see ``CommitLoop.attempt``)."""
        now = now_ms()
        ict = self.info.in_commit_timestamp
        if ict is not None:
            ict = max(now, ict, self.last_timestamp + 1)
        info = replace(self.info, timestamp=now, in_commit_timestamp=ict)
        actions = tuple(info if isinstance(a, CommitInfo) else a for a in self.actions)
        if current is None:
            return actions
        config = current.metadata.configuration
        if not row_tracking.assigns_row_ids(current.protocol, config):
            return actions
        mark = row_tracking.high_water_mark(current.domains.values())
        keeps = row_tracking.enabled(config)
        return assign_row_ids(actions, current.version + 1, mark, keeps_ids=keeps)[0]

    def _view(self, current: Snapshot) -> TxnView:
        """The participant as the checker sees it: its prepared actions, counted as a
        whole-table read (file level: ``current`` only types the hints) that looked up the
        app ids it writes."""
        actions = tuple(a for a in self.actions if not isinstance(a, CommitInfo))
        app_ids = {a.app_id for a in actions if isinstance(a, SetTransaction)}
        return build_view(
            self.p.table_root,
            self.store.fs,
            None,
            actions=actions,
            read_set=ReadSet(read_whole_table=True, app_ids=app_ids),
            isolation=IsolationLevel.parse(self.p.isolation),
            blind_append=self.p.blind_append,
            protocol=current.protocol,
            metadata=current.metadata,
            row_checker=None,
        )

    def _check(self, winner: WinningCommit, view: TxnView) -> None:
        """Raise if ``winner`` conflicts with the prepared actions (prepared rules)."""
        if winner.txn_id == self.p.txn_id:
            raise DecidedElsewhere(f"{self.p.label} v{winner.version} holds its commit")
        info = winner.commit_info
        if info is not None:
            stamp = info.in_commit_timestamp or info.timestamp or 0
            self.last_timestamp = max(self.last_timestamp, stamp)
        try:
            check_winning_commit(winner, view, PREPARED_RULES)
        except CommitConflictError as exc:
            exc.winning_transaction = winner.group_id
            name_table(exc, self.p.label)
            raise

    def _conflict(
        self, kind: type[CommitConflictError], version: int, operation: str | None, rule: str
    ) -> NoReturn:
        raise kind(
            f"{self.p.label}: version {version} ({operation or 'unknown'}) conflicts: {rule}",
            winning_version=version,
            winning_operation=operation,
            isolation_level=self.p.isolation,
            rule=rule,
        )

    def discard(self) -> None:
        names = list(self.superseded)
        if self.staged is not None and self.staged.staged_commit is not None:
            names.append(self.staged.staged_commit)
        for name in names:
            try:
                self.store.fs.delete(self.store.log_path(name))
            except Exception:  # best effort: cleanup removes it once its version is out
                logger.debug("could not delete staged commit %s", name, exc_info=True)
        self.superseded.clear()
        self.staged = None
