"""COMMIT PREPARED and ROLLBACK PREPARED, from any process (see :mod:`txsql.txn.prepared`).

Both decide through the coordinator: the first record naming the prepared id with a
``preparedOutcome`` is the decision, and every later call reports it (COMMIT PREPARED of
a committed transaction says so with its versions; the opposite calls are typed errors).
A commit decision is ratified exactly like a group commit (stage, one put-if-absent,
publish); files are deleted only after a rollback decision is in the coordinator, so a
committed transaction's files are never touched.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import NoReturn

from txsql.errors import (
    AddedFileMissingError,
    CommitConflictError,
    CommitRetriesExceededError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentTransactionError,
    CorruptLogError,
    MetadataChangedError,
    PreparedConflictError,
    PreparedTransactionCommittedError,
    PreparedTransactionRolledBackError,
)
from txsql.log.actions import Action, CommitInfo, DomainMetadata, RemoveFile, SetTransaction
from txsql.log.checkpoint import should_checkpoint
from txsql.log.codec import decode_commit, encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import log_store_for
from txsql.storage.written import Written
from txsql.txn.coordinator import (
    Coordinator,
    GroupRecord,
    Participant,
    now_ms,
    publish_record,
    remove_published_staged,
    roll_forward,
    staged_name,
)
from txsql.txn.own_files import delete_uncommitted, require_added_files
from txsql.txn.prepared import PreparedOutcome, decision_versions
from txsql.txn.prepared_records import (
    COMMIT,
    ROLLBACK,
    PreparedParticipant,
    PreparedRecord,
    find_decision,
    is_decision_of,
    mark_decided,
    read_prepared,
)
from txsql.txn.readset import norm_path
from txsql.txn.winner import WinningCommit

logger = logging.getLogger(__name__)


class _DecidedElsewhere(Exception):
    """A participant's log holds this transaction's commit: another process decided."""


def commit_prepared(
    coordinator: Coordinator, prepared_id: str, max_attempts: int
) -> PreparedOutcome:
    """Commit the prepared transaction ``prepared_id``; idempotent.

    Raises:
        PreparedTransactionNotFoundError: no such prepared transaction.
        PreparedTransactionRolledBackError: it was rolled back.
        PreparedConflictError: a commit since PREPARE conflicts; it is now rolled back.
        CommitRetriesExceededError: lost more ratifications than allowed (still prepared).
    """
    record = read_prepared(coordinator, prepared_id)
    position = roll_forward(coordinator)
    decision = find_decision(coordinator, record)
    if decision is not None:
        return _report(record, decision, coordinator)
    stagers: list[_Restager] = []
    ratifying = False
    try:
        stagers.extend(_Restager(p) for p in record.participants)
        for _ in range(max(1, max_attempts)):
            for stager in stagers:
                stager.restage_if_stale()
            group = GroupRecord(
                position,
                record.transaction_id,
                now_ms(),
                tuple(s.staged for s in stagers if s.staged is not None),
                COMMIT,
            )
            ratifying = True  # an error inside the put may hide a success
            if coordinator.ratify(group):
                break
            theirs = coordinator.read(position)
            ratifying = False
            if is_decision_of(theirs, record.transaction_id):
                _discard(stagers)
                return _report(record, theirs, coordinator)
            publish_record(theirs)
            coordinator.mark_published(position)
            position += 1
        else:
            raise CommitRetriesExceededError(
                f"gave up committing prepared transaction {prepared_id!r} after "
                f"{max_attempts} attempts; it is still prepared"
            )
    except (CommitConflictError, AddedFileMissingError) as exc:
        _discard(stagers)
        decision = _decide_rollback(coordinator, record)
        if decision.prepared_outcome == COMMIT:  # another process committed it meanwhile
            return _report(record, decision, coordinator)
        raise _rolled_back_by_conflict(record, exc) from exc
    except _DecidedElsewhere:
        _discard(stagers)
        roll_forward(coordinator)
        decided = find_decision(coordinator, record)
        if decided is None:
            raise CorruptLogError(
                f"a table holds prepared transaction {prepared_id!r}'s commit, but the "
                f"coordinator has no decision on it"
            ) from None
        return _report(record, decided, coordinator)
    except BaseException:
        if not ratifying:
            _discard(stagers)  # never ratified: nobody may publish them
        raise
    crash_point("prepared_ratified")
    publish_record(group)
    coordinator.mark_published(group.position)
    _finish_commit(coordinator, record, group)
    return PreparedOutcome(
        record.transaction_id, "committed", decision_versions(record, group), group.position
    )


def rollback_prepared(coordinator: Coordinator, prepared_id: str) -> PreparedOutcome:
    """Roll back the prepared transaction ``prepared_id`` (again: says so).

    Raises:
        PreparedTransactionNotFoundError: no such prepared transaction.
        PreparedTransactionCommittedError: it was committed; nothing changes.
    """
    record = read_prepared(coordinator, prepared_id)
    roll_forward(coordinator)
    already = find_decision(coordinator, record) is not None
    decision = _decide_rollback(coordinator, record)
    if decision.prepared_outcome == COMMIT:
        versions = dict(decision_versions(record, decision))
        shown = ", ".join(f"{t} v{v}" for t, v in versions.items())
        raise PreparedTransactionCommittedError(
            f"prepared transaction {prepared_id!r} was already committed ({shown}); it "
            f"cannot be rolled back",
            versions,
        )
    state = "already rolled back" if already else "rolled back"
    return PreparedOutcome(record.transaction_id, state, (), decision.position)


def _decide_rollback(coordinator: Coordinator, record: PreparedRecord) -> GroupRecord:
    """Ratify a rollback decision unless one exists; returns the decision that holds.
    After a rollback decision, delete what the transaction wrote."""
    position = roll_forward(coordinator)
    decision = find_decision(coordinator, record)
    while decision is None:
        mine = GroupRecord(position, record.transaction_id, now_ms(), (), ROLLBACK)
        if coordinator.ratify(mine):
            decision = mine
            break
        theirs = coordinator.read(position)
        if is_decision_of(theirs, record.transaction_id):
            decision = theirs
            break
        publish_record(theirs)
        coordinator.mark_published(position)
        position += 1
    coordinator.mark_published(decision.position)
    mark_decided(coordinator, decision)
    if decision.prepared_outcome == ROLLBACK:
        crash_point("prepared_rollback_decided")
        for p in record.participants:
            _delete_prepared_files(p)
    return decision


def _delete_prepared_files(p: PreparedParticipant) -> None:
    """The files of a rolled-back participant (only those no commit names), then its
    actions file. Best effort: what stays is an orphan VACUUM removes."""
    store = log_store_for(p.table_root)
    written = Written(frozenset(p.written_files), frozenset(p.written_directories))
    try:
        delete_uncommitted(DeltaLog(store), written, p.read_version)
        store.fs.delete(store.log_path(p.actions_file))
    except FileNotFoundError:
        pass
    except Exception:
        logger.warning("could not delete what %s prepared", p.label, exc_info=True)


def _report(
    record: PreparedRecord, decision: GroupRecord, coordinator: Coordinator
) -> PreparedOutcome:
    """An existing decision: an already committed transaction (finishing its publish and
    cleanup if its decider died), or the error of a rolled-back one."""
    if decision.prepared_outcome == ROLLBACK:
        mark_decided(coordinator, decision)
        raise PreparedTransactionRolledBackError(
            f"prepared transaction {record.transaction_id!r} was rolled back; nothing of it "
            f"was committed"
        )
    roll_forward(coordinator)
    _finish_commit(coordinator, record, decision)
    return PreparedOutcome(
        record.transaction_id,
        "already committed",
        decision_versions(record, decision),
        decision.position,
    )


def _finish_commit(coordinator: Coordinator, record: PreparedRecord, group: GroupRecord) -> None:
    """After the commit decision is published: remember it, checksums and checkpoints,
    and the prepared actions files and staged commits nobody needs any more."""
    mark_decided(coordinator, group)
    for participant in group.participants:
        store = log_store_for(participant.table_root)
        log = DeltaLog(store)
        try:
            snapshot = log.snapshot(participant.version)
            log.write_checksum(snapshot)
            if should_checkpoint(participant.version, snapshot.configuration):
                log.checkpoint(snapshot)
            remove_published_staged(store, participant.version)
        except Exception:  # never fail a committed transaction over housekeeping
            logger.warning("post-commit work on %s failed", participant.table_root, exc_info=True)
    for p in record.participants:
        store = log_store_for(p.table_root)
        try:
            store.fs.delete(store.log_path(p.actions_file))
        except FileNotFoundError:
            pass
        except Exception:
            logger.debug("could not delete %s", p.actions_file, exc_info=True)


def _rolled_back_by_conflict(record: PreparedRecord, exc: Exception) -> PreparedConflictError:
    cause = getattr(exc, "message", str(exc))
    base = exc if isinstance(exc, CommitConflictError) else None
    return PreparedConflictError(
        f"prepared transaction {record.transaction_id!r} was not committed and is now "
        f"rolled back: {cause}",
        winning_version=base.winning_version if base else -1,
        winning_operation=base.winning_operation if base else None,
        isolation_level=base.isolation_level if base else None,
        rule=base.rule if base else "a file it adds is gone",
        files=base.files if base else (),
    )


def _discard(stagers: list[_Restager]) -> None:
    for stager in stagers:
        stager.discard()


class _Restager:
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
            raise CorruptLogError(
                f"the prepared actions of {p.label} ({p.actions_file}) are gone, but the "
                f"coordinator has no decision on the transaction",
                hint="Something deleted files under _delta_log/_staged_commits; ROLLBACK "
                "PREPARED the transaction and run it again.",
            ) from None
        self.info = next(a for a in self.actions if isinstance(a, CommitInfo))
        self.app_ids = {a.app_id for a in self.actions if isinstance(a, SetTransaction)}
        self.domains = {a.domain for a in self.actions if isinstance(a, DomainMetadata)}
        self.removes = {norm_path(a.path) for a in self.actions if isinstance(a, RemoveFile)}
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
        for v, actions in zip(versions, self.log.read_commits(versions), strict=True):
            self._check(WinningCommit(v, tuple(actions)))
        if versions and self.log.snapshot(newest).metadata.id != self.p.table_id:
            kind = MetadataChangedError
            self._conflict(kind, newest, None, "the table was dropped and created again")
        self.checked_through = newest
        if self.staged is not None:
            self.superseded.append(self.staged.staged_commit)
        written = self._rebased()
        require_added_files(self.log, written, self.info.operation or "COMMIT PREPARED")
        name = staged_name(newest + 1, str(uuid.uuid4()))
        self.store.fs.write_if_absent(self.store.log_path(name), encode_commit(written))
        self.staged = Participant(
            self.p.table_root, self.p.table_id, newest + 1, name, self.p.txn_id
        )

    def _rebased(self) -> tuple[Action, ...]:
        """The prepared actions with a fresh commitInfo (timestamps after the winners')."""
        now = now_ms()
        ict = self.info.in_commit_timestamp
        if ict is not None:
            ict = max(now, ict, self.last_timestamp + 1)
        info = replace(self.info, timestamp=now, in_commit_timestamp=ict)
        return tuple(info if isinstance(a, CommitInfo) else a for a in self.actions)

    def _check(self, winner: WinningCommit) -> None:
        """File-level, as if the whole table was read (the read set did not survive)."""
        if winner.txn_id == self.p.txn_id:
            raise _DecidedElsewhere
        info = winner.commit_info
        if info is not None:
            stamp = info.in_commit_timestamp or info.timestamp or 0
            self.last_timestamp = max(self.last_timestamp, stamp)
        operation = winner.operation
        if winner.protocol is not None or winner.metadata is not None:
            what = "protocol" if winner.protocol is not None else "schema or properties"
            kind: type[CommitConflictError] = MetadataChangedError
            self._conflict(kind, winner.version, operation, f"it changed the table's {what}")
        if self.app_ids & {t.app_id for t in winner.of_type(SetTransaction)}:
            kind = ConcurrentTransactionError
            self._conflict(kind, winner.version, operation, "it wrote the same exactly-once app id")
        if self.domains & {d.domain for d in winner.of_type(DomainMetadata)}:
            kind = ConcurrentTransactionError
            self._conflict(kind, winner.version, operation, "it wrote the same metadata domain")
        if self.p.blind_append:
            return  # read nothing: no data change can invalidate it
        if self.removes & {norm_path(p) for p in winner.removes}:
            kind = ConcurrentDeleteDeleteError
            self._conflict(kind, winner.version, operation, "it removed a file this one removes")
        changes_data = any(a.data_change for a in winner.adds.values()) or any(
            r.data_change for r in winner.removes.values()
        )
        if not changes_data:
            return
        if self.p.isolation == "WriteSerializable" and winner.is_blind_append:
            return
        self._conflict(
            ConcurrentAppendError,
            winner.version,
            operation,
            "it changed data of a table this transaction read (a prepared transaction "
            "counts as having read its whole tables)",
        )

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
        if self.staged is not None:
            names.append(self.staged.staged_commit)
        for name in names:
            try:
                self.store.fs.delete(self.store.log_path(name))
            except Exception:  # best effort: cleanup removes it once its version is out
                logger.debug("could not delete staged commit %s", name, exc_info=True)
        self.superseded.clear()
        self.staged = None
