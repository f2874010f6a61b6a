"""The commit loop: put-if-absent, and on a lost race check, rebase and retry.

Delta Spark's ``doCommitRetryIteratively``: every winning commit is read in version order
and checked against the (possibly already rebased) transaction; a winner carrying our own
``txnId`` means an earlier attempt landed and only its response was lost.

Each attempt first checks that the files it adds still exist
(:func:`~txsql.txn.commit.own_files.require_added_files`), and the loop knows at every moment
whether an attempt might have landed unseen (:attr:`CommitLoop.outcome_unknown`): only
when it certainly did not may the transaction delete the files it wrote.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from txsql.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    ConcurrentDeleteReadError,
    CorruptDeletionVectorError,
    TransactionError,
    VersionExistsError,
)
from txsql.log import features, properties
from txsql.log.actions import Action, CommitInfo, Metadata, Protocol, SetTransaction
from txsql.log.checkpoint import should_checkpoint
from txsql.log.cleanup import cleanup_after_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.schema import parse_schema
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.leftovers import remove_stale_leftovers
from txsql.txn.commit.own_files import require_added_files
from txsql.txn.conflicts.checker import CheckOutcome, TxnView, check_winning_commit
from txsql.txn.isolation import choose_isolation, is_blind_append, row_level_enabled
from txsql.txn.readset import norm_path
from txsql.txn.result import CommitResult
from txsql.txn.rowlevel.compaction_races import apply_carry, apply_dml_translation, own_row_map
from txsql.txn.rowlevel.state import RowLevelState, apply_rebases
from txsql.txn.winner import GROUP_TAG, WinningCommit
from txsql.version import __version__

if TYPE_CHECKING:
    from txsql.log.deltalog import DeltaLog
    from txsql.txn.conflicts.checker import RowPredicateChecker
    from txsql.txn.isolation import IsolationLevel
    from txsql.txn.join_read import JoinChecker
    from txsql.txn.readset import ReadSet
    from txsql.txn.staging import StagedActions

logger = logging.getLogger(__name__)

ENGINE_INFO = f"txsql/{__version__}"
DEFAULT_MAX_ATTEMPTS = 10_000  # generous: non-conflicting writers must never give up
GROUP_PARAMETER = "multiTableTransactionId"


@dataclass(frozen=True)
class CommitRequest:
    """What one commit needs from its transaction (so this module never imports it).

    ``staged`` is the transaction's own staged state: rebasing rewrites it in place.
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


class CommitLoop:
    """One ``Transaction.commit`` call: prepare, then attempt until landed or in conflict."""

    def __init__(
        self,
        txn: CommitRequest,
        operation: str,
        parameters: Mapping[str, Any],
        metrics: Mapping[str, Any],
    ) -> None:
        self.txn = txn
        self.log = txn.log
        self.staged = txn.staged
        self.snapshot = txn.snapshot
        self.operation = operation
        self.parameters = {k: _param(v) for k, v in parameters.items()}
        self.metrics = {k: str(v) for k, v in metrics.items()}
        self.rebased: set[str] = set()
        self.winners: list[int] = []
        # Set by the coordinator for a commit that is part of a group (issue 20).
        self.group_id: str | None = None
        # Built by prepare(): the commitInfo, the checker's view, the row-level state, the
        # next version to try and the newest commit timestamp seen.
        self.info: CommitInfo | None = None
        self.view: TxnView | None = None
        self.rows: RowLevelState | None = None
        self.version = 0
        self.last_timestamp = 0
        # True from a put until the commit at that version is known not to be ours: an
        # error in between leaves it unknown whether our commit landed.
        self.outcome_unknown = False

    def run(self) -> CommitResult:
        """Plain commit: put-if-absent ``<version>.json``, absorbing winners on a lost race."""
        skipped = self.prepare()
        if skipped is not None:
            return skipped
        for attempt in range(1, self.txn.max_attempts + 1):
            info, written = self.next_attempt()
            try:
                # Lists the log first: never write into a gap or on top of a lost commit.
                self.log.check_next_version(self.version)
                require_added_files(self.log, written, self.operation)
                self.outcome_unknown = True
                self.log.store.write_if_absent(self.version, encode_commit(written))
            except VersionExistsError:
                pass
            else:
                self.after_commit(self.version)
                return self.result(self.version, attempt, info, written)
            latest = self.log.latest_version()
            if latest is None or latest < self.version:
                self.outcome_unknown = False  # nothing at that version: not ours either
                continue  # the file vanished (log cleanup?): simply try the version again
            done = self.absorb_winners(latest, attempt)
            if done is not None:
                return done
        raise CommitRetriesExceededError(
            f"gave up committing {self.operation} after {self.txn.max_attempts} attempts"
        )

    def prepare(self) -> CommitResult | None:
        """Build the commitInfo and the checker's view; a result when the commit is skipped
        (exactly-once: our app version is already in the read snapshot)."""
        snapshot = self.snapshot
        protocol, metadata = self._protocol_and_metadata()
        features.check_writable(protocol, metadata)
        read_version = snapshot.version if snapshot else None
        conf = snapshot.configuration if snapshot else metadata.configuration
        actions = self.staged.actions()
        isolation = choose_isolation(actions, conf, self.txn.requested_isolation)
        blind = is_blind_append(actions, self.txn.read_set.is_empty)
        parameters = dict(self.parameters)
        extra = None
        if self.group_id is not None:
            # Delta's RFC tag, and a parameter so that DESCRIBE HISTORY shows the group.
            parameters[GROUP_PARAMETER] = self.group_id
            extra = {"tags": {GROUP_TAG: self.group_id}}
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
        if snapshot is not None and row_level_enabled(conf):
            self.rows = RowLevelState(
                self.log.table_root,
                self.log.store.fs,
                {norm_path(f.path): f for f in snapshot.files},
                dict(self.staged.removes),
                dict(self.staged.adds),
            )
        self.view = TxnView(
            actions=actions,
            read_set=self.txn.read_set,
            isolation=isolation,
            blind_append=blind,
            schema=parse_schema((snapshot.metadata if snapshot else metadata).schema_string),
            partition_columns=(snapshot.metadata if snapshot else metadata).partition_columns,
            protocol=protocol,
            metadata=metadata,
            rows=self.rows,
            row_checker=self.txn.row_predicate_checker,
            join_checker=self.txn.join_checker,
            column_mapping_mode=properties.column_mapping_mode(conf),
            row_map=own_row_map(self.parameters, actions),
        )
        self.last_timestamp = snapshot.commit_timestamp if snapshot else 0
        self.version = 0 if read_version is None else read_version + 1
        return None

    def next_attempt(self) -> tuple[CommitInfo, tuple[Action, ...]]:
        """The commitInfo (fresh timestamps) and everything one attempt writes."""
        assert self.info is not None and self.view is not None, "prepare() first"
        now = int(time.time() * 1000)
        ict = max(now, self.last_timestamp + 1) if self._ict_enabled(self.view) else None
        self.info = replace(self.info, timestamp=now, in_commit_timestamp=ict)
        return self.info, (self.info, *self.staged.actions())

    def absorb_winners(self, latest: int, attempt: int) -> CommitResult | None:
        """Check (and rebase onto) every winner from :attr:`version` to ``latest``.

        Returns a result when the commit is already done: a winner is our own earlier
        attempt (its response was lost), or wrote our exactly-once app version. Raises
        the conflict otherwise found; else the next version to try is ``latest + 1``.
        """
        assert self.info is not None and self.view is not None, "prepare() first"
        versions = range(self.version, latest + 1)
        for v, winner_actions in zip(versions, self.log.read_commits(versions), strict=True):
            winner = WinningCommit(v, tuple(winner_actions))
            if winner.txn_id == self.txn.txn_id:
                return self.result(v, attempt, self.info, winner.actions)  # response lost
            self.outcome_unknown = False  # the first winner sits where we tried
            if self._winner_committed_our_app_version(winner):
                return self.result(v, attempt, self.info, (), skipped=True)
            try:
                self._check_winner(winner, self.view, self.rows)
            except CorruptDeletionVectorError as exc:
                if not isinstance(exc.__cause__, FileNotFoundError):
                    raise
                raise _vacuumed_while_rebasing(self.operation, winner, exc) from exc
            except CommitConflictError as exc:
                exc.winning_transaction = winner.group_id
                raise
            self.winners.append(v)
            self.last_timestamp = max(self.last_timestamp, _timestamp(winner))
        self.version = max(self.version, latest + 1)
        return None

    def _check_winner(
        self, winner: WinningCommit, view: TxnView, rows: RowLevelState | None
    ) -> None:
        """Raise if ``winner`` conflicts; else rebase the staged actions onto it."""
        view.actions = self.staged.actions()
        outcome = check_winning_commit(winner, view)
        view.protocol, view.metadata = outcome.protocol, outcome.metadata
        if rows is not None:
            self._translate(outcome, rows, view)
            if outcome.rebases:
                apply_rebases(rows, outcome.rebases, self.staged.removes, self.staged.adds)
                self.rebased.update(r.path for r in outcome.rebases)
            rows.advance(winner)

    def _translate(self, outcome: CheckOutcome, rows: RowLevelState, view: TxnView) -> None:
        """Compaction vs DML: restage onto a winning compaction, or carry a DML's deletes."""
        if outcome.translation is not None:
            view.read_set = apply_dml_translation(
                outcome.translation, rows, self.staged.removes, self.staged.adds, view.read_set
            )
            self.rebased.update(outcome.translation.deletes)
        if outcome.carry is not None:
            apply_carry(outcome.carry, rows, self.staged.removes, self.staged.adds)
            self.rebased.update(p for p, r in outcome.carry.deletes.items() if r)

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

    def after_commit(self, version: int) -> None:
        """The hooks of every landed commit (autocommit, explicit COMMIT, CREATE, a group's
        participants): checksum and checkpoint, log cleanup after a checkpoint, and what
        killed writers left behind."""
        checkpointed = False
        try:
            snapshot: Snapshot = self.log.snapshot(version)
            self.log.write_checksum(snapshot)  # best effort: never raises
            if should_checkpoint(version, snapshot.configuration):
                self.log.checkpoint(snapshot)
                checkpointed = True
        except Exception:  # a failed checkpoint never fails a landed commit
            logger.warning("checkpoint at version %d failed", version, exc_info=True)
        if checkpointed:
            cleanup_after_checkpoint(self.log, version)  # never raises
        if isinstance(self.log.store.fs, LocalFileIO):
            # Every commit: temp files in the log and stale staging folders (two small
            # directory listings). The table root's DV temp files need a listing of the
            # root, so that waits for a checkpoint. Never raises.
            remove_stale_leftovers(self.log.table_root, scan_root=checkpointed)


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


def _timestamp(winner: WinningCommit) -> int:
    info = winner.commit_info
    if info is None:
        return 0
    return info.in_commit_timestamp or info.timestamp or 0


def _param(value: Any) -> str:
    """Delta writes operationParameters values as JSON-encoded strings."""
    return value if isinstance(value, str) else json.dumps(value)
