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
from collections.abc import Sequence

from txsql.errors import CommitRetriesExceededError, TransactionError
from txsql.log.codec import encode_commit
from txsql.log.features import multi_table_enrolled
from txsql.storage.crashpoints import crash_point
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.paths import commit_name
from txsql.txn.commit.after_commit import after_commit
from txsql.txn.commit.loop import CommitLoop
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.multitable.compaction import maybe_compact, retention_ms
from txsql.txn.multitable.coordinator import (
    Coordinator,
    GroupRecord,
    Participant,
    coordinator_root,
    now_ms,
)
from txsql.txn.multitable.members import (
    GroupMember,
    catch_up_member,
    delete_staged,
    discard_staged,
    group_members,
    one_coordinator,
)
from txsql.txn.multitable.publish import (
    publish_record,
    ratify_next,
    remove_published_staged,
    roll_forward,
    staged_name,
)
from txsql.txn.result import CommitResult

logger = logging.getLogger(__name__)

# How often (in versions) a commit lists the staged directory to sweep orphans of crashed
# writers (Delta's default checkpoint interval), where it does not every time (see
# remove_staged).
STAGED_SWEEP_INTERVAL = 10
# A participant's commit up to this size rides inside the coordinator record; a larger one
# is written as a staged commit first, so that records stay quick to read back. 64 KiB
# holds a commit of a few hundred files.
INLINE_MAX_BYTES = 64 * 1024


class GroupCommitter:
    """The committer of enrolled tables: one coordinator record commits every loop.

    Args:
        labels: How errors name each loop's table.
        reads: The Serializable checks of tables read but not written: those enrolled in
            this group's coordinator run before every ratify attempt (atomic with the
            commit), the others once before anything is staged.
    """

    def __init__(self, labels: Sequence[str], reads: Sequence[ReadCheck] = ()) -> None:
        self.labels = labels
        self.reads = reads

    def commit(self, loops: Sequence[CommitLoop]) -> list[CommitResult]:
        """Commit every loop's transaction as one group, all or nothing.

        Raises:
            CommitConflictError: a participant conflicts with a winner on its table (the
                message starts with the table's label).
            TransactionError: participants use different coordinators, or an exactly-once
                app version was committed for some participants and not others.
            CommitRetriesExceededError: more lost ratifications than the attempts allowed.
        """
        group_id = str(uuid.uuid4())
        members = group_members(loops, self.labels)
        coordinator = one_coordinator(members)
        skipped = [m.loop.prepare(group_id) for m in members]
        if any(s is not None for s in skipped):
            if all(s is not None for s in skipped):
                return [s for s in skipped if s is not None]
            raise TransactionError(
                "the exactly-once app version of this transaction was already committed to "
                "some of its tables and not to others",
                hint="Give each table's writes their own app id, or use a new app version.",
            )
        atomic = [check for check in self.reads if _commits_through(check, coordinator)]
        for check in atomic:
            check.atomic = True
        try:
            for check in self.reads:
                if check not in atomic:
                    check.run()  # cannot be atomic: no record of ours orders its commits
            record = _stage_and_ratify(members, coordinator, group_id, atomic)
        except BaseException:
            if not any(m.loop.outcome_unknown for m in members):
                discard_staged(members)  # never ratified: nobody may publish them
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
            retention = retention_ms(m.configuration for m in members)
            maybe_compact(coordinator, record.position, now_ms(), retention)
        except Exception:  # ratified is committed: the next txsql access publishes the rest
            logger.warning(
                "publishing group %s failed; rolled forward later", group_id, exc_info=True
            )
        return [_finish(m, published) for m in members]


def _commits_through(check: ReadCheck, coordinator: Coordinator) -> bool:
    """Whether the read table commits through ``coordinator`` (then the check can be
    atomic with the group's ratification)."""
    snapshot = check.txn.snapshot()
    if snapshot is None or not multi_table_enrolled(snapshot.configuration):
        return False
    return coordinator_root(check.txn.table_root, snapshot.configuration) == coordinator.root


def _stage_and_ratify(
    members: Sequence[GroupMember],
    coordinator: Coordinator,
    group_id: str,
    reads: Sequence[ReadCheck],
) -> GroupRecord:
    attempt = 0

    def propose(position: int) -> GroupRecord:
        nonlocal attempt
        attempt += 1
        staged_now = 0
        for m in members:
            if _stage_if_stale(m, attempt):
                staged_now += 1
                crash_point(f"mtx_staged_{staged_now}")
        # Every record below ``position`` is published now, and every commit to an
        # enrolled read table is a record: checking each such table through its newest
        # version checks it through ``position``, so a put that wins there is validated
        # exactly, and one that loses re-checks the winner's commits on the next attempt.
        for check in reads:
            check.run()
        participants = tuple(m.participant for m in members if m.participant)
        return GroupRecord(position, group_id, now_ms(), participants)

    def in_doubt(unknown: bool) -> None:
        for m in members:
            if unknown:
                m.loop.put_started()
            else:
                m.loop.put_lost()

    max_attempts = min(m.loop.max_attempts for m in members)
    ratified = ratify_next(
        coordinator,
        roll_forward(coordinator),
        propose,
        # An earlier put of ours landed and only its answer was lost.
        lambda theirs: theirs.transaction_id == group_id,
        attempts=max_attempts,
        in_doubt=in_doubt,
    )
    if ratified is None:
        raise CommitRetriesExceededError(
            f"gave up ratifying a transaction on {', '.join(m.label for m in members)} after "
            f"{max_attempts} attempts"
        )
    return ratified.record


def _stage_if_stale(m: GroupMember, attempt: int) -> bool:
    """Stage ``m`` at its table's next version unless its staged commit still is that."""
    loop = m.loop
    newest = _newest_version(loop)
    if m.participant is not None and m.participant.version == newest + 1:
        return False
    catch_up_member(
        m, newest, attempt, "Nothing more was written; check the table's history before retrying."
    )
    if m.participant is not None and m.participant.staged_commit is not None:
        m.superseded.append(m.participant.staged_commit)
    written = loop.attempt()
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


def _finish(m: GroupMember, published: bool) -> CommitResult:
    """After ratification: hooks of a landed commit, staged files no longer needed (our
    own staged commit stays until it is published: roll forward needs it)."""
    assert m.participant is not None
    loop = m.loop
    version = m.participant.version
    try:
        if published:
            after_commit(loop.log, version)
        remove_staged(m, version, published)
    except Exception:  # never fail a ratified commit over housekeeping
        logger.warning("post-commit work on %s failed", m.label, exc_info=True)
    return loop.landed(version, m.attempts, m.written)


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
        delete_staged(m, [name])
        crash_point("mtx_cleanup")  # the same kill point as the sweep's
