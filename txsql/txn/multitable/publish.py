"""Publishing ratified groups, and the ratify loop every coordinator decision uses.

Publishing a participant copies its commit to ``_delta_log/<version>.json`` with
put-if-absent (see :mod:`txsql.txn.multitable.coordinator` for why that is idempotent and
safe). :func:`roll_forward` publishes what a dead writer ratified; :func:`ratify_next` puts
a record at the first free position, publishing every record it finds in its way, which
keeps the coordinator's invariant: before a writer puts record ``p`` it has published
every record below ``p``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import NamedTuple

from txsql.errors import CorruptLogError, TxSqlError, VersionExistsError
from txsql.log.actions import CommitInfo
from txsql.log.codec import decode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import LogStore, log_store_for
from txsql.storage.paths import commit_name
from txsql.txn.multitable.coordinator import (
    STAGED_COMMIT_NAME,
    STAGED_DIR,
    Coordinator,
    GroupRecord,
    Participant,
)

logger = logging.getLogger(__name__)


def staged_name(version: int, attempt_id: str) -> str:
    """``_staged_commits/<version>.<uuid>.json``, relative to ``_delta_log``."""
    return f"{STAGED_DIR}/{version:020d}.{attempt_id}.json"


def roll_forward(coordinator: Coordinator) -> int:
    """Publish the coordinator's newest record if a crashed writer left it unpublished;
    returns the next free position (every record below it is then published)."""
    latest = coordinator.latest_position()
    known = coordinator.published_through()
    if latest >= 0 and (known is None or latest > known):
        publish_record(coordinator.read(latest))
    coordinator.mark_published(latest)
    return latest + 1


def publish_record(record: GroupRecord, held: Mapping[str, bytes] | None = None) -> None:
    """Publish every participant of a ratified record (crash points between them).

    ``held``: the bytes of staged commits the caller wrote itself, by staged name. The
    writer that just ratified passes its own (``{}`` when every commit is inline), which
    spares a read back of each and the check that the version is free: the put-if-absent
    answers that.
    """
    for number, participant in enumerate(record.participants, start=1):
        if held is None:
            publish_participant(participant)
        else:
            data = participant.inline_commit or held[str(participant.staged_commit)]
            publish_own(participant, data)
        if number < len(record.participants):
            crash_point(f"mtx_published_{number}")


def publish_own(participant: Participant, data: bytes) -> None:
    """Publish a commit whose bytes we hold: one put-if-absent."""
    store = log_store_for(participant.table_root)
    try:
        store.write_if_absent(participant.version, data)
    except VersionExistsError:  # another process rolled our record forward first
        _require_ours(store, participant)


def publish_participant(participant: Participant) -> None:
    """Roll one participant forward: publish its commit unless that already happened."""
    store = log_store_for(participant.table_root)
    version = participant.version
    if store.fs.exists(store.log_path(commit_name(version))):
        _require_ours(store, participant)
        return
    data = participant.inline_commit
    if data is not None:
        # No staged file whose absence says "published long ago" (a staged file goes with a
        # dropped table too): the commit it follows is the sign. Log cleanup never deletes
        # a table's newest commit, so if version - 1 is gone too, ours was published and
        # cleaned up since, or the table was dropped. If it is there, the table may still
        # be a new one created at the same place: its id says.
        previous = store.log_path(commit_name(version - 1))
        if not store.fs.exists(previous) or _table_replaced(store, participant):
            return
    else:
        try:
            data = store.read_log_file(str(participant.staged_commit))
        except FileNotFoundError:
            # A ratified staged commit is only ever deleted once its version is published,
            # or with its table (DROP): either it was published meanwhile by another
            # process, or the published version is gone with log cleanup or the table.
            if store.fs.exists(store.log_path(commit_name(version))):
                _require_ours(store, participant)
            return
    try:
        store.write_if_absent(version, data)
    except VersionExistsError:
        _require_ours(store, participant)


def _require_ours(store: LogStore, participant: Participant) -> None:
    actions = decode_commit(store.read_commit(participant.version))
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    if info is None or info.txn_id != participant.txn_id:
        if _table_replaced(store, participant):
            return  # the table was dropped and created again since: not ours to finish
        raise CorruptLogError(
            f"version {participant.version} of {participant.table_root} was ratified by the "
            f"multi-table coordinator for txnId {participant.txn_id}, but the log holds "
            f"another commit there: a writer bypassed the coordinator",
            hint="Only txsql may write a table enrolled in multi-table transactions "
            "(txsql.multiTableTransactions = true); stop the other writer and restore "
            "the version from the staged commit named in the coordinator record.",
        )


def _table_replaced(store: LogStore, participant: Participant) -> bool:
    try:
        return DeltaLog(store).snapshot().metadata.id != participant.table_id
    except TxSqlError:
        return False


def remove_published_staged(store: LogStore, latest: int) -> None:
    """Delete staged commits at or below the published ``latest`` version; best effort."""
    directory = store.log_path(STAGED_DIR)
    try:
        listed = store.fs.list_dir(directory)
    except OSError:
        return
    for status in listed:
        match = STAGED_COMMIT_NAME.match(status.name)
        if match is None or int(match.group(1)) > latest:
            continue
        try:
            store.fs.delete(f"{directory}/{status.name}")
        except (OSError, TxSqlError):
            logger.debug("could not delete staged commit %s", status.name, exc_info=True)
        crash_point("mtx_cleanup")


class Ratified(NamedTuple):
    """The record that settles a ratification, and whether this call put it."""

    record: GroupRecord
    ours: bool


def ratify_next(
    coordinator: Coordinator,
    position: int,
    propose: Callable[[int], GroupRecord],
    settled_by: Callable[[GroupRecord], bool],
    *,
    attempts: int | None,
    in_doubt: Callable[[bool], None] = lambda _: None,
) -> Ratified | None:
    """Put ``propose(p)`` at the first free position ``p`` from ``position`` (every record
    below ``position`` is published).

    A taken position holds either a record that settles the matter (``settled_by``: our
    own earlier put whose answer was lost, or another process's decision on the same
    prepared id), which is returned, or someone else's group, which is published before
    the next position is tried. ``in_doubt(True)`` is called before each put and
    ``in_doubt(False)`` once a put is known to have lost: an error in between may hide a
    success. Returns None after ``attempts`` lost positions (None: no bound).
    """
    tried = 0
    while attempts is None or tried < attempts:
        tried += 1
        record = propose(position)
        in_doubt(True)
        if coordinator.ratify(record):
            return Ratified(record, True)
        theirs = coordinator.read(position)
        if settled_by(theirs):
            return Ratified(theirs, False)
        in_doubt(False)
        publish_record(theirs)  # keep the invariant: everything below our next try is out
        coordinator.mark_published(position)
        position += 1
    return None
