"""COMMIT PREPARED and ROLLBACK PREPARED, from any process (see :mod:`txsql.txn.prepared.prepare`).

Both decide through the coordinator: the first record naming the prepared id with a
``preparedOutcome`` is the decision, and every later call reports it (COMMIT PREPARED of
a committed transaction says so with its versions; the opposite calls are typed errors).
A commit decision is ratified exactly like a group commit (stage, one put-if-absent,
publish); files are deleted only after a rollback decision is in the coordinator, so a
committed transaction's files are never touched.
"""

from __future__ import annotations

import logging

from txsql.errors import (
    AddedFileMissingError,
    CommitConflictError,
    CommitRetriesExceededError,
    CorruptLogError,
    PreparedConflictError,
    PreparedTransactionCommittedError,
    PreparedTransactionRolledBackError,
)
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import log_store_for
from txsql.storage.written import Written
from txsql.txn.commit.after_commit import after_commit
from txsql.txn.commit.own_files import delete_uncommitted
from txsql.txn.multitable.coordinator import Coordinator, GroupRecord, now_ms
from txsql.txn.multitable.publish import (
    publish_record,
    ratify_next,
    remove_published_staged,
    roll_forward,
)
from txsql.txn.prepared.prepare import PreparedOutcome, decision_versions
from txsql.txn.prepared.records import (
    COMMIT,
    ROLLBACK,
    PreparedParticipant,
    PreparedRecord,
    find_decision,
    is_decision_of,
    mark_decided,
    read_prepared,
)
from txsql.txn.prepared.restage import DecidedElsewhere, Restager

logger = logging.getLogger(__name__)


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
    stagers: list[Restager] = []
    ratifying = False

    def propose(position: int) -> GroupRecord:
        for stager in stagers:
            stager.restage_if_stale()
        staged = tuple(s.staged for s in stagers if s.staged is not None)
        return GroupRecord(position, record.transaction_id, now_ms(), staged, COMMIT)

    def in_doubt(unknown: bool) -> None:
        nonlocal ratifying
        ratifying = unknown  # an error inside the put may hide a success

    try:
        stagers.extend(Restager(p) for p in record.participants)
        ratified = ratify_next(
            coordinator,
            position,
            propose,
            lambda theirs: is_decision_of(theirs, record.transaction_id),
            attempts=max(1, max_attempts),
            in_doubt=in_doubt,
        )
        if ratified is None:
            raise CommitRetriesExceededError(
                f"gave up committing prepared transaction {prepared_id!r} after "
                f"{max_attempts} attempts; it is still prepared"
            )
        if not ratified.ours:
            _discard(stagers)
            return _report(record, ratified.record, coordinator)
        group = ratified.record
    except (CommitConflictError, AddedFileMissingError) as exc:
        _discard(stagers)
        decision, ours = _decide_rollback(coordinator, record)
        if not ours:  # another process decided meanwhile (a rollback deletes the files)
            return _report(record, decision, coordinator)
        raise _rolled_back_by_conflict(record, exc) from exc
    except DecidedElsewhere as what:
        _discard(stagers)
        roll_forward(coordinator)
        decided = find_decision(coordinator, record)
        if decided is None:
            raise CorruptLogError(
                f"prepared transaction {prepared_id!r}: {what}, but the coordinator has no "
                f"decision on it",
                hint="Something deleted or wrote files under _delta_log behind txsql; "
                "ROLLBACK PREPARED the transaction and run it again.",
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
    decision, ours = _decide_rollback(coordinator, record)
    if decision.prepared_outcome == COMMIT:
        versions = dict(decision_versions(record, decision))
        shown = ", ".join(f"{t} v{v}" for t, v in versions.items())
        raise PreparedTransactionCommittedError(
            f"prepared transaction {prepared_id!r} was already committed ({shown}); it "
            f"cannot be rolled back",
            versions,
        )
    state = "rolled back" if ours else "already rolled back"
    return PreparedOutcome(record.transaction_id, state, (), decision.position)


def _decide_rollback(coordinator: Coordinator, record: PreparedRecord) -> tuple[GroupRecord, bool]:
    """Ratify a rollback decision unless one exists; returns the decision that holds and
    whether this call made it. After a rollback decision, delete what the transaction
    wrote (again, if an earlier caller died before it finished)."""
    position = roll_forward(coordinator)
    decision = find_decision(coordinator, record)
    ours = False
    if decision is None:
        ratified = ratify_next(
            coordinator,
            position,
            lambda at: GroupRecord(at, record.transaction_id, now_ms(), (), ROLLBACK),
            lambda theirs: is_decision_of(theirs, record.transaction_id),
            attempts=None,
        )
        assert ratified is not None  # unbounded: only returns once decided
        decision, ours = ratified
    coordinator.mark_published(decision.position)
    mark_decided(coordinator, decision)
    if decision.prepared_outcome == ROLLBACK:
        crash_point("prepared_rollback_decided")
        for p in record.participants:
            _delete_prepared_files(p)
    return decision, ours


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
    """After the commit decision is published: remember it, run every participant's
    after-commit hooks (checksum, checkpoint, log cleanup, leftovers), and delete the
    prepared actions files and staged commits nobody needs any more."""
    mark_decided(coordinator, group)
    for participant in group.participants:
        store = log_store_for(participant.table_root)
        try:
            after_commit(DeltaLog(store), participant.version)
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


def _discard(stagers: list[Restager]) -> None:
    for stager in stagers:
        stager.discard()
