"""The commit loop: prepare, then (catch up with winners, propose, put) until it lands.

Delta Spark's ``doCommitRetryIteratively``: every winning commit is read in version order
and checked against the (possibly already rebased) transaction; a winner carrying our own
``txnId`` means an earlier attempt landed and only its response was lost.

One :class:`CommitLoop` per table and commit, used the same way by every path through its
methods: :meth:`~CommitLoop.prepare`, :meth:`~CommitLoop.catch_up` (check and rebase onto
the winners up to a version), :meth:`~CommitLoop.attempt` (what the next put writes) and
:meth:`~CommitLoop.put_started` / :meth:`~CommitLoop.put_lost` around the put. The put
itself is the committer's (:mod:`txsql.txn.commit.committer`): a log file, or a
coordinator record for a group (:mod:`txsql.txn.multitable.group_commit`).

Each attempt checks that the files it adds still exist
(:func:`~txsql.txn.commit.own_files.require_added_files`), and the loop knows at every
moment whether an attempt might have landed unseen (:attr:`CommitLoop.outcome_unknown`):
only when it certainly did not may the transaction delete the files it wrote.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from txsql.errors import (
    CommitConflictError,
    ConcurrentDeleteReadError,
    CorruptDeletionVectorError,
    TransactionError,
)
from txsql.log import features, properties, row_tracking
from txsql.log.actions import (
    Action,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
)
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.storage.written import WrittenFiles, recording
from txsql.txn.commit.own_files import require_added_files
from txsql.txn.commit.row_ids import assign_row_ids
from txsql.txn.conflicts.checker import check_winning_commit
from txsql.txn.conflicts.view import CheckOutcome, TxnView, build_view
from txsql.txn.hooks import JoinChecker, RowPredicateChecker
from txsql.txn.isolation import IsolationLevel, choose_isolation, is_blind_append
from txsql.txn.readset import ReadSet
from txsql.txn.result import CommitResult
from txsql.txn.rowlevel.compaction_races import own_row_map
from txsql.txn.rowlevel.rebase import DmlTranslation, RebaseKind, Rebases, rebase
from txsql.txn.staging import StagedActions
from txsql.txn.winner import GROUP_TAG, WinningCommit
from txsql.version import __version__

ENGINE_INFO = f"txsql/{__version__}"
DEFAULT_MAX_ATTEMPTS = 10_000  # generous: non-conflicting writers must never give up
GROUP_PARAMETER = "multiTableTransactionId"


@dataclass(frozen=True)
class CommitRequest:
    """What one commit needs from its transaction (so this module never imports it).

    The loop works on a copy of ``staged``: rebasing never changes the transaction's own.
    ``ledger`` records the DV files a rebase writes (deleted if the commit does not land).
    """

    log: DeltaLog
    snapshot: Snapshot | None
    staged: StagedActions
    txn_id: str
    requested_isolation: IsolationLevel | None
    read_set: ReadSet
    row_predicate_checker: RowPredicateChecker | None
    join_checker: JoinChecker | None
    max_attempts: int
    ledger: WrittenFiles


class CommitLoop:
    """One table's commit: prepare, then catch up and attempt until landed or in conflict."""

    def __init__(
        self,
        txn: CommitRequest,
        operation: str,
        parameters: Mapping[str, Any],
        metrics: Mapping[str, Any],
    ) -> None:
        self.txn = txn
        self.log = txn.log
        self.staged = txn.staged.copy()
        self.snapshot = txn.snapshot
        self.operation = operation
        self.parameters = {k: _param(v) for k, v in parameters.items()}
        self.metrics = {k: str(v) for k, v in metrics.items()}
        self.rebased: set[str] = set()
        self.winners: list[int] = []
        # Built by prepare(): the commitInfo, the checker's view, the next version to try
        # and the newest commit timestamp seen.
        self.info: CommitInfo | None = None
        self.view: TxnView | None = None
        self.version = 0
        self.last_timestamp = 0
        # Row tracking: whether this commit assigns row ids, and the highest id assigned in
        # the version it commits on top of (raised by every winner caught up with).
        self.assigns_row_ids = False
        self.keeps_row_ids = False  # delta.enableRowTracking: copies carry their stable ids
        self.row_id_mark = -1
        # True from a put until the commit at that version is known not to be ours: an
        # error in between leaves it unknown whether our commit landed.
        self.outcome_unknown = False

    @property
    def max_attempts(self) -> int:
        return self.txn.max_attempts

    def prepare(self, group_id: str | None = None) -> CommitResult | None:
        """Build the commitInfo and the checker's view; a result when the commit is skipped
        (exactly-once: our app version is already in the read snapshot).

        ``group_id``: the multi-table transaction this commit is part of (its commitInfo
        names it, as Delta's RFC tags a group's commits).
        """
        snapshot = self.snapshot
        protocol, metadata = self._protocol_and_metadata()
        features.check_writable(
            protocol, metadata, existing=snapshot.metadata if snapshot else None
        )
        read_version = snapshot.version if snapshot else None
        conf = snapshot.configuration if snapshot else metadata.configuration
        actions = self.staged.actions()
        isolation = choose_isolation(actions, conf, self.txn.requested_isolation)
        blind = is_blind_append(actions, self.txn.read_set.is_empty)
        parameters = dict(self.parameters)
        extra = None
        if group_id is not None:
            # Delta's RFC tag, and a parameter so that DESCRIBE HISTORY shows the group.
            parameters[GROUP_PARAMETER] = group_id
            extra = {"tags": {GROUP_TAG: group_id}}
        self.info = CommitInfo(
            operation=self.operation,
            operation_parameters=parameters,
            read_version=read_version,
            isolation_level=isolation.value,
            is_blind_append=blind,
            operation_metrics=self.metrics,
            engine_info=ENGINE_INFO,
            txn_id=self.txn.txn_id,
            extra=extra,
        )
        if snapshot is not None and self._already_committed(snapshot.app_versions):
            return self.result(snapshot.version, 0, self.info, (), skipped=True)
        self.view = build_view(
            self.log.table_root,
            self.log.store.fs,
            snapshot,
            actions=actions,
            read_set=self.txn.read_set,
            isolation=isolation,
            blind_append=blind,
            protocol=protocol,
            metadata=metadata,
            row_checker=self.txn.row_predicate_checker,
            join_checker=self.txn.join_checker,
            row_map=own_row_map(self.parameters, actions),
        )
        self.last_timestamp = snapshot.commit_timestamp if snapshot else 0
        self.version = 0 if read_version is None else read_version + 1
        self.assigns_row_ids = row_tracking.assigns_row_ids(protocol, metadata.configuration)
        self.keeps_row_ids = row_tracking.enabled(metadata.configuration)
        if snapshot is not None:
            self.row_id_mark = row_tracking.high_water_mark(snapshot.domains.values())
        return None

    def attempt(self, *, row_ids: bool = True) -> tuple[Action, ...]:
        """Everything the next put writes at :attr:`version`: a fresh commitInfo (new
        timestamps) and the staged actions; refused if a file it adds is gone.

        ``row_ids=False`` leaves new files without row ids: PREPARE TRANSACTION stores
        its actions so, and COMMIT PREPARED assigns them at the version it lands on.
        """
        assert self.info is not None and self.view is not None, "prepare() first"
        now = int(time.time() * 1000)
        ict = max(now, self.last_timestamp + 1) if self._ict_enabled(self.view) else None
        self.info = replace(self.info, timestamp=now, in_commit_timestamp=ict)
        written: tuple[Action, ...] = (self.info, *self.staged.actions())
        if self.assigns_row_ids and row_ids:
            written, _ = assign_row_ids(
                written, self.version, self.row_id_mark, keeps_ids=self.keeps_row_ids
            )
        require_added_files(self.log, written, self.operation)
        return written

    def put_started(self) -> None:
        """A put of :meth:`attempt`'s actions begins: until :meth:`put_lost` (or a winner
        at that version proves otherwise) it may have landed unseen."""
        self.outcome_unknown = True

    def put_lost(self) -> None:
        """The put is known not to have landed (the version is free, or taken by another
        writer): the transaction may delete its files if it gives up now."""
        self.outcome_unknown = False

    def catch_up(self, latest: int, attempt: int) -> CommitResult | None:
        """Check (and rebase onto) every winner from :attr:`version` to ``latest``.

        Returns a result when the commit is already done: a winner is our own earlier
        attempt (its response was lost), or wrote our exactly-once app version. Raises
        the conflict otherwise found; else the next version to try is ``latest + 1``.
        """
        with recording(self.txn.ledger):  # a rebase writes new DV files
            return self._catch_up(latest, attempt)

    def _catch_up(self, latest: int, attempt: int) -> CommitResult | None:
        assert self.info is not None and self.view is not None, "prepare() first"
        versions = range(self.version, latest + 1)
        for v, winner_actions in zip(versions, self.log.read_commits(versions), strict=True):
            winner = WinningCommit(v, tuple(winner_actions))
            if winner.txn_id == self.txn.txn_id:
                return self.result(v, attempt, self.info, winner.actions)  # response lost
            self.put_lost()  # the first winner sits where we tried
            if self._winner_committed_our_app_version(winner):
                return self.result(v, attempt, self.info, (), skipped=True)
            try:
                self._rebase_onto(winner, self.view)
            except CorruptDeletionVectorError as exc:
                if not isinstance(exc.__cause__, FileNotFoundError):
                    raise
                raise _vacuumed_while_rebasing(self.operation, winner, exc) from exc
            except CommitConflictError as exc:
                exc.winning_transaction = winner.group_id
                raise
            self.winners.append(v)
            self.last_timestamp = max(self.last_timestamp, _timestamp(winner))
            domains = winner.of_type(DomainMetadata)
            self.row_id_mark = row_tracking.high_water_mark(domains, self.row_id_mark)
        self.version = max(self.version, latest + 1)
        return None

    def _rebase_onto(self, winner: WinningCommit, view: TxnView) -> None:
        """Raise if ``winner`` conflicts; else rebase the staged actions onto it."""
        view.actions = self.staged.actions()
        outcome = check_winning_commit(winner, view)
        view.protocol, view.metadata = outcome.protocol, outcome.metadata
        state = view.rows
        if state is None:
            return
        for kind in _rebase_kinds(outcome):
            removes, adds, rebased = rebase(kind, state, self.staged.removes, self.staged.adds)
            self.staged.replace_files(removes, adds)
            self.rebased.update(rebased)
            if isinstance(kind, DmlTranslation):  # we now change the compaction's outputs
                view.read_set = kind.reads_after(view.read_set)
                state.restage(removes, adds)
        state.advance(winner)

    def _protocol_and_metadata(self) -> tuple[Protocol, Metadata]:
        staged = self.staged.actions()
        protocol = next((a for a in staged if isinstance(a, Protocol)), None)
        metadata = next((a for a in staged if isinstance(a, Metadata)), None)
        if self.snapshot is not None:
            protocol = protocol or self.snapshot.protocol
            metadata = metadata or self.snapshot.metadata
        if protocol is None or metadata is None:
            raise TransactionError(
                "a new table's first commit needs a protocol and a metadata action",
                hint="Create the table with CREATE TABLE first.",
            )
        return protocol, metadata

    def _already_committed(self, app_versions: Mapping[str, int]) -> bool:
        """Exactly-once: a staged (appId, version) not newer than the recorded one."""
        return any(
            app_versions.get(app, -1) >= version
            for app, version in self.staged.app_versions().items()
        )

    def _winner_committed_our_app_version(self, winner: WinningCommit) -> bool:
        theirs = {t.app_id: t.version for t in winner.of_type(SetTransaction)}
        return self._already_committed(theirs)

    def _ict_enabled(self, view: TxnView) -> bool:
        return properties.in_commit_timestamps_enabled(view.metadata.configuration)

    def landed(self, version: int, attempts: int, written: tuple[Action, ...]) -> CommitResult:
        """The result of ``written`` (an :meth:`attempt`'s actions) landing at ``version``."""
        info = next(a for a in written if isinstance(a, CommitInfo))
        return self.result(version, attempts, info, written)

    def result(
        self,
        version: int,
        attempts: int,
        info: CommitInfo,
        actions: tuple[Action, ...],
        skipped: bool = False,
    ) -> CommitResult:
        return CommitResult(
            version=version,
            read_version=info.read_version,
            attempts=attempts,
            commit_info=info,
            actions=actions,
            skipped=skipped,
            isolation_level=info.isolation_level,
            rebased_files=tuple(sorted(self.rebased)),
            winners=tuple(self.winners),
        )


def _vacuumed_while_rebasing(
    operation: str, winner: WinningCommit, error: CorruptDeletionVectorError
) -> ConcurrentDeleteReadError:
    """A rebase needs the deletion vector of a file the winner removed, and it is gone: a
    VACUUM with a short RETAIN deleted it meanwhile. The table is fine; this commit is not
    possible any more (a conflict, not a damaged table)."""
    info = winner.commit_info
    return ConcurrentDeleteReadError(
        f"{operation} was not committed: version {winner.version} removed a file it changed, "
        f"and the deletion vector needed to carry its change over is gone ({error.message})",
        winning_version=winner.version,
        winning_operation=info.operation if info else None,
        rule="a file this transaction changed was removed and then vacuumed before the "
        "change could be rebased",
        hint="Re-run the statement; it will read the newest version. VACUUM with a RETAIN "
        "shorter than your statements take makes this likely.",
    )


def _rebase_kinds(outcome: CheckOutcome) -> list[RebaseKind]:
    """The rebases a passed check asks for, in the order they apply."""
    kinds: list[RebaseKind] = []
    if outcome.translation is not None:
        kinds.append(outcome.translation)
    if outcome.carry is not None:
        kinds.append(outcome.carry)
    if outcome.rebases:
        kinds.append(Rebases(tuple(outcome.rebases)))
    return kinds


def _timestamp(winner: WinningCommit) -> int:
    info = winner.commit_info
    if info is None:
        return 0
    return info.in_commit_timestamp or info.timestamp or 0


def _param(value: Any) -> str:
    """Delta writes operationParameters values as JSON-encoded strings."""
    return value if isinstance(value, str) else json.dumps(value)
