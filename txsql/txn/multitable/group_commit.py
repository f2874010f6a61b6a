"""Commit through the coordinator: stage -> group-ratify -> publish (Delta RFC, issue 20).

Every commit to an enrolled table comes here, a single-table one as a group of one.

1. **Roll forward.** Publish the coordinator's newest record if its writer died before
   publishing; then every record below the next free position is published, so each
   table's newest ``_delta_log`` commit is its newest ratified version.
2. **Stage.** Each participant is checked against its own table's winners by the commit
   loop's checker (row level included) and proposed at the version after that table's
   newest. A small commit rides inline in the record; a larger one is written to
   ``_delta_log/_staged_commits/<version>.<uuid>.json`` first. Nothing is visible yet.
3. **Ratify.** One put-if-absent of the coordinator record at the next position naming
   every participant: the commit point of the group. If the position is taken, the
   winning record is published (keeping the invariant), participants whose version it
   took are re-checked and re-staged, and the next position is tried. Under
   Serializable, the tables the transaction read but does not write are validated right
   before each put (:mod:`txsql.txn.commit.read_validation`): enrolled ones in this
   coordinator are thereby checked at the very position the group ratifies at.
4. **Publish.** Each staged commit becomes ``_delta_log/<version>.json``. A failure here
   does not fail the commit: it is ratified, and the next txsql access completes it.

Why a free position proves every proposed version is still next: a writer puts position
``p`` only after publishing every record below ``p`` and reading each table's newest
version from its log; all commits to enrolled tables are ratified through positions, so
if ``p`` was free nothing took those versions in between.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from txsql.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    TransactionError,
)
from txsql.log.actions import Action, CommitInfo
from txsql.log.codec import encode_commit
from txsql.storage.crashpoints import crash_point
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.paths import commit_name
from txsql.storage.written import WrittenFiles, recording
from txsql.txn.commit.loop import CommitLoop
from txsql.txn.commit.own_files import require_added_files
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.multitable.coordinator import (
    Coordinator,
    GroupRecord,
    Participant,
    coordinator_at,
    coordinator_root,
    now_ms,
    publish_record,
    remove_published_staged,
    roll_forward,
    staged_name,
)
from txsql.txn.result import CommitResult

if TYPE_CHECKING:
    from txsql.txn.transaction import Transaction

logger = logging.getLogger(__name__)

# How often (in versions) a commit lists the staged directory to sweep orphans of crashed
# writers (Delta's default checkpoint interval), where it does not every time (see
# remove_staged).
STAGED_SWEEP_INTERVAL = 10
# A participant's commit up to this size rides inside the coordinator record; a larger one
# is written as a staged commit first, so that records stay quick to read back. 64 KiB
# holds a commit of a few hundred files.
INLINE_MAX_BYTES = 64 * 1024


@dataclass
class GroupMember:
    """One participant: its prepared commit loop, and what it staged last."""

    loop: CommitLoop
    label: str  # how errors name the table
    configuration: Mapping[str, str]
    table_id: str
    participant: Participant | None = None
    written: tuple[Action, ...] = ()
    attempts: int = 0
    superseded: list[str] = field(default_factory=list)  # staged commits of lost attempts
    ledger: WrittenFiles | None = None  # records the DV files a rebase writes
    staged_bytes: bytes = b""  # what the staged commit holds: publishing needs no read back
    name_in_errors: bool = False  # conflicts start with the label (groups of several)


def commit_group(
    loops: Sequence[CommitLoop],
    labels: Sequence[str],
    group_id: str | None = None,
    *,
    ledgers: Sequence[WrittenFiles] | None = None,
    reads: Sequence[ReadCheck] = (),
) -> list[CommitResult]:
    """Commit every loop's transaction as one group, all or nothing.

    ``reads`` are the Serializable checks of tables read but not written: those enrolled
    in this group's coordinator run before every ratify attempt (atomic with the commit),
    the others once before anything is staged.

    Raises:
        CommitConflictError: a participant conflicts with a winner on its table (the
            message starts with the table's label).
        TransactionError: participants use different coordinators, or an exactly-once
            app version was committed for some participants and not others.
        CommitRetriesExceededError: more lost ratifications than the attempts allowed.
    """
    group_id = group_id or str(uuid.uuid4())
    members = [group_member(loop, label) for loop, label in zip(loops, labels, strict=True)]
    for m, ledger in zip(members, ledgers or (), strict=False):
        m.ledger = ledger
    for m in members:
        m.name_in_errors = len(members) > 1
    coordinator = one_coordinator(members)
    for m in members:
        m.loop.group_id = group_id
    skipped = [m.loop.prepare() for m in members]
    if any(s is not None for s in skipped):
        if all(s is not None for s in skipped):
            return [s for s in skipped if s is not None]
        raise TransactionError(
            "the exactly-once app version of this transaction was already committed to "
            "some of its tables and not to others",
            hint="Give each table's writes their own app id, or use a new app version.",
        )
    for check in reads:
        check.atomic = check.coordinator_root == coordinator.root
    atomic = [check for check in reads if check.atomic]
    try:
        for check in reads:
            if not check.atomic:
                check.run()  # cannot be atomic: no record of ours orders its commits
        record = _stage_and_ratify(members, coordinator, group_id, atomic)
    except BaseException:
        if not any(m.loop.outcome_unknown for m in members):
            _discard_staged(members)  # never ratified: nobody may publish them
        raise
    crash_point("mtx_ratified")
    published = False
    try:
        held = {
            p.staged_commit: m.staged_bytes
            for m in members
            if (p := m.participant) is not None and p.staged_commit is not None
        }
        publish_record(record, held)
        coordinator.mark_published(record.position)
        published = True
    except Exception:  # ratified is committed: the next txsql access publishes the rest
        logger.warning("publishing group %s failed; rolled forward later", group_id, exc_info=True)
    return [_finish(m, published) for m in members]


def group_member(loop: CommitLoop, label: str) -> GroupMember:
    snapshot = loop.snapshot
    if snapshot is None:
        raise TransactionError(
            f"{label} has no committed version: a new table cannot join a multi-table transaction",
            hint="Create the table first (CREATE TABLE ... TBLPROPERTIES "
            "('txsql.multiTableTransactions' = 'true')), then write it in the transaction.",
        )
    return GroupMember(loop, label, snapshot.configuration, snapshot.metadata.id)


def one_coordinator(members: Sequence[GroupMember]) -> Coordinator:
    roots = {coordinator_root(m.loop.log.table_root, m.configuration) for m in members}
    if len(roots) != 1:
        shown = ", ".join(sorted(roots))
        raise TransactionError(
            f"the tables of this transaction commit through different coordinators ({shown})",
            hint="Keep the tables in one warehouse, or set the same "
            "'txsql.multiTableTransactions.coordinator' location on all of them.",
        )
    return coordinator_at(roots.pop())


def _stage_and_ratify(
    members: Sequence[GroupMember],
    coordinator: Coordinator,
    group_id: str,
    reads: Sequence[ReadCheck] = (),
) -> GroupRecord:
    max_attempts = min(m.loop.txn.max_attempts for m in members)
    position = roll_forward(coordinator)
    for attempt in range(1, max_attempts + 1):
        staged_now = 0
        for m in members:
            with recording(m.ledger) if m.ledger is not None else nullcontext():
                restaged = _stage_if_stale(m, attempt)
            if restaged:
                staged_now += 1
                crash_point(f"mtx_staged_{staged_now}")
        # Every record below ``position`` is published now, and every commit to an
        # enrolled read table is a record: checking each such table through its newest
        # version checks it through ``position``, so a put that wins there is validated
        # exactly, and one that loses re-checks the winner's commits on the next attempt.
        for check in reads:
            check.run()
        record = GroupRecord(
            position, group_id, now_ms(), tuple(m.participant for m in members if m.participant)
        )
        for m in members:
            m.loop.outcome_unknown = True  # an error inside the put may hide a success
        if coordinator.ratify(record):
            return record
        theirs = coordinator.read(position)
        if theirs.transaction_id == group_id:
            return theirs  # an earlier put of ours landed and only its answer was lost
        for m in members:
            m.loop.outcome_unknown = False
        publish_record(theirs)  # keep the invariant: everything below our next try is out
        coordinator.mark_published(position)
        position += 1
    raise CommitRetriesExceededError(
        f"gave up ratifying a transaction on {', '.join(m.label for m in members)} after "
        f"{max_attempts} attempts"
    )


def _stage_if_stale(m: GroupMember, attempt: int) -> bool:
    """Stage ``m`` at its table's next version unless its staged commit still is that."""
    loop = m.loop
    newest = _newest_version(loop)
    if m.participant is not None and m.participant.version == newest + 1:
        return False
    if newest >= loop.version:
        try:
            done = loop.absorb_winners(newest, attempt)
        except CommitConflictError as exc:
            if m.name_in_errors:
                name_table(exc, m.label)
            raise
        if done is not None:  # a winner holds our app version, or is our own commit
            raise TransactionError(
                f"{m.label}: version {done.version} already holds this transaction's write",
                hint="Nothing more was written; check the table's history before retrying.",
            )
    if m.participant is not None and m.participant.staged_commit is not None:
        m.superseded.append(m.participant.staged_commit)
    _, written = loop.next_attempt()
    require_added_files(loop.log, written, loop.operation)
    data = encode_commit(written)
    table, txn_id = loop.log.table_root, loop.txn.txn_id
    if len(data) <= INLINE_MAX_BYTES:
        m.participant = Participant(table, m.table_id, loop.version, None, txn_id, data)
    else:
        name = staged_name(loop.version, str(uuid.uuid4()))
        loop.log.store.fs.write_if_absent(loop.log.store.log_path(name), data)
        m.staged_bytes = data
        m.participant = Participant(table, m.table_id, loop.version, name, txn_id)
    m.written, m.attempts = written, attempt
    return True


def _newest_version(loop: CommitLoop) -> int:
    """The table's newest version. Usually two name probes instead of a listing: the
    version the loop builds on exists and the one it proposes is free. Anything else (a
    winner landed, or log cleanup removed the base) takes the listing, which also refuses
    a log with gaps."""
    fs, path = loop.log.store.fs, loop.log.store.log_path
    proposed = loop.version
    if (
        proposed > 0
        and not fs.exists(path(commit_name(proposed)))
        and fs.exists(path(commit_name(proposed - 1)))
    ):
        return proposed - 1
    latest = loop.log.latest_version()
    return -1 if latest is None else latest


def name_table(exc: CommitConflictError, label: str) -> None:
    """Conflicts in a group say which table they are about."""
    if not exc.message.startswith(f"{label}: "):
        exc.message = f"{label}: {exc.message}"
        exc.args = (exc._render(),)


def _discard_staged(members: Sequence[GroupMember]) -> None:
    for m in members:
        names = list(m.superseded)
        if m.participant is not None and m.participant.staged_commit is not None:
            names.append(m.participant.staged_commit)
        _delete_quietly(m, names)


def _delete_quietly(m: GroupMember, names: Sequence[str]) -> None:
    store = m.loop.log.store
    for name in names:
        try:
            store.fs.delete(store.log_path(name))
        except Exception:  # best effort: cleanup removes it once its version is published
            logger.debug("could not delete staged commit %s", name, exc_info=True)


def _finish(m: GroupMember, published: bool) -> CommitResult:
    """After ratification: hooks of a landed commit, staged files no longer needed (our
    own staged commit stays until it is published: roll forward needs it)."""
    assert m.participant is not None
    loop = m.loop
    version = m.participant.version
    info = next(a for a in m.written if isinstance(a, CommitInfo))
    try:
        if published:
            loop.after_commit(version)
        remove_staged(m, version, published)
    except Exception:  # never fail a ratified commit over housekeeping
        logger.warning("post-commit work on %s failed", m.label, exc_info=True)
    return loop.result(version, m.attempts, info, m.written)


def remove_staged(m: GroupMember, version: int, published: bool) -> None:
    """Delete the staged commits no longer needed once ``version`` is ratified.

    Published: ours and the ones we superseded go. Every STAGED_SWEEP_INTERVAL versions a
    listing of the staged directory also sweeps orphans of crashed writers at or below the
    version; on local disk, where a listing is cheap, a commit that staged files sweeps
    every time instead of deleting its own by name. Unpublished: ours must stay (roll
    forward reads it); older ones go.
    """
    store = m.loop.log.store
    if not published:
        remove_published_staged(store, version - 1)
        return
    assert m.participant is not None
    own = [name for name in (*m.superseded, m.participant.staged_commit) if name is not None]
    if not own:
        crash_point("mtx_cleanup")  # an inline commit: its housekeeping has begun
    if version % STAGED_SWEEP_INTERVAL == 0 or (own and isinstance(store.fs, LocalFileIO)):
        remove_published_staged(store, version)
        return
    for name in own:
        _delete_quietly(m, [name])
        crash_point("mtx_cleanup")  # the same kill point as the sweep's


def commit_together(
    entries: Sequence[tuple[Transaction, CommitLoop]],
    labels: Sequence[str],
    *,
    reads: Sequence[ReadCheck] = (),
) -> list[CommitResult]:
    """Commit several transactions (one per table) through the coordinator, all or none.

    ``labels`` name the tables in errors; ``reads`` validate tables read but not written
    (see :func:`commit_group`). Each transaction ends committed, or failed (its files
    deleted) unless the outcome is unknown.
    """
    loops = [loop for _, loop in entries]
    # A rebase may write new DV files: each member's into its own transaction's ledger.
    ledgers = [txn.written for txn, _ in entries]
    try:
        results = commit_group(loops, labels, ledgers=ledgers, reads=reads)
    except BaseException:
        unknown = any(loop.outcome_unknown for loop in loops)
        for txn, _ in entries:
            txn.settle_failure(unknown)
        raise
    for (txn, _), result in zip(entries, results, strict=True):
        txn.settle_success(result)
    return results
