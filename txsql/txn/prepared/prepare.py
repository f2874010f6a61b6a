"""Prepared transactions: PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED.

**Prepare** (the preparing process, :func:`prepare_group`): every participant is checked
against its table's winners by the full checker (row level included) exactly as a commit
would be, its actions are written to a prepared-actions file, and then the prepared record
(:mod:`txsql.txn.prepared.records`) is put: from that put on, the transaction survives
the process. Nothing is visible.

**Commit** (any process, :mod:`txsql.txn.prepared.decide`): each participant is
re-checked against the commits made since it was prepared and staged again at its table's
next version (:mod:`txsql.txn.prepared.restage`); the group is ratified through the
coordinator with a record that is both its commit point and the decision on the prepared
id. The re-check is conservative (the row-level read set does not outlive the preparing
process), but a blind append read nothing, so only a protocol, schema or property change,
a winner with its exactly-once app id or a dropped table conflicts with it: that is the
two-phase sink property.

**Roll back** (same module): a decision record without participants, then the files the
transaction wrote are deleted (only those no commit names).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from txsql.errors import TransactionError
from txsql.log.actions import CommitInfo
from txsql.log.codec import encode_commit
from txsql.storage.crashpoints import crash_point
from txsql.storage.written import Written
from txsql.txn.commit.loop import CommitLoop
from txsql.txn.commit.own_files import delete_uncommitted
from txsql.txn.multitable.coordinator import STAGED_DIR, GroupRecord, now_ms
from txsql.txn.multitable.members import (
    GroupMember,
    catch_up_member,
    group_members,
    one_coordinator,
)
from txsql.txn.multitable.publish import roll_forward
from txsql.txn.prepared.records import (
    PreparedParticipant,
    PreparedRecord,
    require_valid_id,
    write_prepared,
)
from txsql.txn.transaction import Transaction

PREPARED_PREFIX = "prepared."


@dataclass(frozen=True)
class PreparedOutcome:
    """What PREPARE / COMMIT PREPARED / ROLLBACK PREPARED did.

    ``state``: ``prepared``, ``committed``, ``already committed``, ``rolled back`` or
    ``already rolled back``. ``versions``: (table, version) pairs: the version each table
    became (committed), or would become if committed now (prepared).
    """

    transaction_id: str
    state: str
    versions: tuple[tuple[str, int], ...] = ()
    position: int | None = None

    @property
    def message(self) -> str:
        listed = ", ".join(f"{t} v{v}" for t, v in self.versions)
        where = f" ({listed})" if listed else ""
        if self.state == "prepared":
            return f"prepared transaction {self.transaction_id!r}{where}; nothing is visible yet"
        return f"transaction {self.transaction_id!r} {self.state}{where}"


def prepare_transactions(
    entries: Sequence[tuple[Transaction, CommitLoop]], labels: Sequence[str], prepared_id: str
) -> PreparedOutcome:
    """Prepare several transactions (one per table) under ``prepared_id``: each ends
    prepared, or failed with its files deleted."""
    loops = [loop for _, loop in entries]
    try:
        outcome = prepare_group(loops, labels, prepared_id)
    except BaseException:
        for txn, _ in entries:
            txn.settle_failure(False)  # nothing durable names its files
        raise
    for txn, _ in entries:
        txn.settle_prepared()
    return outcome


def prepare_group(
    loops: Sequence[CommitLoop],
    labels: Sequence[str],
    prepared_id: str,
) -> PreparedOutcome:
    """Prepare every loop's transaction under ``prepared_id`` (all tables enrolled).

    On success the loops' ledgers are taken (closed): the files belong to the prepared
    record.
    On failure nothing durable is left (the caller's transactions delete their files).

    Raises:
        CommitConflictError: a participant conflicts with a winner on its table.
        PreparedTransactionExistsError: the id is taken.
        TransactionError: exactly-once app version already committed, several
            coordinators, an invalid id.
    """
    require_valid_id(prepared_id)
    members = group_members(loops, labels)
    coordinator = one_coordinator(members)
    # The group id is the prepared id: DESCRIBE HISTORY shows it once committed.
    if any(m.loop.prepare(prepared_id) is not None for m in members):
        raise TransactionError(
            "this transaction's exactly-once app version is already committed; nothing "
            "was prepared",
            hint="ROLLBACK; the write it holds is already in the table.",
        )
    decide_from = roll_forward(coordinator)
    written_files: list[tuple[GroupMember, str]] = []
    taken: list[tuple[GroupMember, Written]] = []
    try:
        participants = []
        for number, m in enumerate(members, start=1):
            participants.append(_prepare_member(m, written_files))
            crash_point(f"prepare_staged_{number}")
        # From here the files belong to the record (or are deleted below).
        taken = [(m, m.loop.txn.ledger.take(close=True)) for m in members]
        participants = [_with_written(p, w) for p, (_, w) in zip(participants, taken, strict=True)]
        record = PreparedRecord(prepared_id, decide_from, now_ms(), tuple(participants))
        write_prepared(coordinator, record)
    except BaseException:
        _delete_actions_files(written_files)
        for m, written in taken:
            snapshot = m.loop.snapshot
            delete_uncommitted(m.loop.log, written, snapshot.version if snapshot else None)
        raise
    crash_point("prepared_recorded")
    return PreparedOutcome(
        prepared_id, "prepared", tuple((p.label, p.version) for p in record.participants)
    )


def _prepare_member(
    m: GroupMember, written_files: list[tuple[GroupMember, str]]
) -> PreparedParticipant:
    """Check ``m`` against every winner so far, then write its actions (not staged for a
    version: no coordinator record can name this file)."""
    loop = m.loop
    latest = loop.log.latest_version()
    newest = -1 if latest is None else latest
    catch_up_member(m, newest, 1, "Nothing was prepared; check the table's history.")
    # Row ids depend on the version a commit lands on: COMMIT PREPARED assigns them.
    written = loop.attempt(row_ids=False)
    info = written[0]
    assert isinstance(info, CommitInfo)
    name = f"{STAGED_DIR}/{PREPARED_PREFIX}{uuid.uuid4()}.json"
    loop.log.store.fs.write_if_absent(loop.log.store.log_path(name), encode_commit(written))
    written_files.append((m, name))
    snapshot = loop.snapshot
    assert snapshot is not None  # group_members refuses a table without a version
    return PreparedParticipant(
        table_root=loop.log.table_root,
        table_id=m.table_id,
        label=m.label,
        read_version=snapshot.version,
        version=loop.version,
        actions_file=name,
        txn_id=loop.txn.txn_id,
        isolation=info.isolation_level or "WriteSerializable",
        blind_append=bool(info.is_blind_append),
    )


def _with_written(p: PreparedParticipant, written: Written) -> PreparedParticipant:
    return PreparedParticipant(
        **{
            **p.__dict__,
            "written_files": tuple(sorted(written.files)),
            "written_directories": tuple(sorted(written.directories)),
        }
    )


def _delete_actions_files(written_files: Sequence[tuple[GroupMember, str]]) -> None:
    for m, name in written_files:
        store = m.loop.log.store
        # A leftover would harm nobody: no record names it, nothing reads it.
        with contextlib.suppress(Exception):
            store.fs.delete(store.log_path(name))


def decision_versions(record: PreparedRecord, decision: GroupRecord) -> tuple[tuple[str, int], ...]:
    """(label, version) of each table a commit decision published."""
    labels = {p.table_root: p.label for p in record.participants}
    return tuple((labels.get(p.table_root, p.table_root), p.version) for p in decision.participants)
