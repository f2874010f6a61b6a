"""Publish ratified staged commits into ``_delta_log``, and remove orphaned staged ones.

Publishing a participant copies its staged commit to ``_delta_log/<version>.json`` with
put-if-absent. It is idempotent: a commit already there carrying the participant's txnId
counts as published (another process rolled the same record forward). A commit there
with another txnId means some writer bypassed the coordinator: that is reported as a
damaged log, never papered over.

A staged commit whose version is already published can never be ratified any more (a
group proposing that version would find its coordinator position taken and re-stage), so
cleanup may delete it, whether it was the published one or an orphan of a lost attempt.
"""

from __future__ import annotations

import logging
import re

from txsql.errors import CorruptLogError, TxSqlError, VersionExistsError
from txsql.log.actions import CommitInfo
from txsql.log.codec import decode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.logstore import LogStore, log_store_for
from txsql.storage.paths import commit_name
from txsql.txn.coordinator import Coordinator, GroupRecord, Participant

logger = logging.getLogger(__name__)

STAGED_DIR = "_staged_commits"
_STAGED = re.compile(r"^(\d{20})\.[0-9a-fA-F-]{36}\.json$")


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


def publish_record(record: GroupRecord) -> None:
    """Publish every participant of a ratified record (crash points between them)."""
    for number, participant in enumerate(record.participants, start=1):
        publish_participant(participant)
        if number < len(record.participants):
            crash_point(f"mtx_published_{number}")


def publish_participant(participant: Participant) -> None:
    store = log_store_for(participant.table_root)
    version = participant.version
    if store.fs.exists(store.log_path(commit_name(version))):
        _require_ours(store, participant)
        return
    try:
        data = store.read_log_file(participant.staged_commit)
    except FileNotFoundError:
        # A ratified staged commit is only ever deleted once its version is published, or
        # with its table (DROP): either it was published meanwhile by another process, or
        # the published version is gone with log cleanup or the table itself.
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
        match = _STAGED.match(status.name)
        if match is None or int(match.group(1)) > latest:
            continue
        try:
            store.fs.delete(f"{directory}/{status.name}")
        except (OSError, TxSqlError):
            logger.debug("could not delete staged commit %s", status.name, exc_info=True)
        crash_point("mtx_cleanup")
