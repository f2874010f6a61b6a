"""Compaction of coordinator records: a warehouse's coordinator does not grow forever.

Every multi-table group leaves a record (~3 KB with inline commits); a million transactions
would keep 3 GB. Once a record is published to every participant, its content lives on in
the tables' own logs (the winning group's name too: it is a tag in each published
commitInfo), so the record is only needed by:

- roll forward, which only ever publishes the *newest* record (never compacted);
- read points, which read records at or after their position (newer than retention,
  unless a statement stays open longer than the retention);
- prepared transactions, whose decision is scanned for from ``decideFrom``: the records
  from the oldest undecided PREPARE's ``decideFrom`` on are kept, and decision records
  (``preparedOutcome``) are moved to ``kept/``, where reads still find them, so
  ``COMMIT PREPARED`` stays idempotent;
- ``SHOW TRANSACTIONS``, which lists the newest records and the summary's count.

Records older than the retention below that horizon go. The summary
``<coordinator>/compacted.json`` (:class:`CompactionSummary`) names the lowest live
position: records are contiguous from it to the newest, so probing for the newest starts
there (:meth:`Coordinator.latest_position`), whatever a stale hint says.

Crash safety: the summary is written first (a whole-file replace), naming the range about
to be deleted (``deletingFrom``), then records are deleted in ascending order (any record
still there has every later one after it: a position a process knows stays a valid probe
start or is gone), then the summary is written again with the range done. A kill at any
point leaves a usable coordinator; the next compaction deletes the rest of the range
(deleting a missing record is a no-op).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from txsql.errors import TxSqlError
from txsql.log.properties import parse_interval_ms
from txsql.storage.crashpoints import crash_point
from txsql.txn.multitable.coordinator import (
    SUMMARY_NAME,
    TRUSTED_MS,
    CompactionSummary,
    Coordinator,
    GroupRecord,
    now_ms,
    read_summary,
)
from txsql.txn.multitable.publish import publish_participant, roll_forward
from txsql.txn.prepared.records import (
    decided_ids,
    find_decision,
    mark_decided,
    prepared_ids,
    read_prepared,
)

logger = logging.getLogger(__name__)

# Warehouse-level, set like the coordinator itself (a property of the enrolled tables, the
# longest across a group's tables wins: keeping longer is always safe).
RETENTION_PROPERTY = "txsql.multiTableTransactions.coordinatorRetention"
# Seven days, as Delta's delta.deletedFileRetentionDuration: long enough for any statement
# or read point to finish and for an operator to look at last week's transactions with
# SHOW TRANSACTIONS, short enough that records stay bounded (a week's groups).
DEFAULT_RETENTION = "interval 7 days"
# The after-commit path compacts every COMPACT_INTERVAL records (as the hint interval):
# one listing of prepared/ and a few reads per interval, never per commit.
COMPACT_INTERVAL = 128


@dataclass(frozen=True)
class Compacted:
    """What one compaction removed: positions ``[first, lowest_live)`` (empty if equal)."""

    first: int
    lowest_live: int
    deleted: int
    summary: CompactionSummary


def retention_ms(configurations: Iterable[Mapping[str, str]]) -> int:
    """The retention the tables of a group ask for: the longest (default 7 days)."""
    found = [c.get(RETENTION_PROPERTY, DEFAULT_RETENTION) for c in configurations]
    return max((parse_interval_ms(v) for v in found), default=parse_interval_ms(DEFAULT_RETENTION))


# One compaction at a time per coordinator: two could each write a summary, and the
# later one's lowest live position could be below what the other deleted. The lock is a
# put-if-absent file; one left by a killed compaction is taken over after LOCK_STALE_MS.
LOCK_NAME = "compaction.lock"
LOCK_STALE_MS = 15 * 60 * 1000


def compact_coordinator(coordinator: Coordinator, now: int, retention: int) -> Compacted:
    """Delete the records older than ``retention`` ms before ``now`` (ms), below the newest
    record and below every undecided prepared transaction; returns what went (nothing
    when another compaction holds the lock)."""
    lock = f"{coordinator.root}/{LOCK_NAME}"
    if not _take_lock(coordinator, lock):
        summary = read_summary(coordinator)
        return Compacted(summary.lowest_live, summary.lowest_live, 0, summary)
    try:
        return _compact(coordinator, now, retention)
    finally:
        with contextlib.suppress(FileNotFoundError, OSError):
            coordinator.fs.delete(lock)


def _take_lock(coordinator: Coordinator, lock: str) -> bool:
    for _ in range(2):
        try:
            coordinator.fs.write_if_absent(lock, str(now_ms()).encode())
            return True
        except FileExistsError:
            try:
                taken = int(coordinator.fs.read(lock))
            except (FileNotFoundError, ValueError):
                taken = 0
            if now_ms() - taken < LOCK_STALE_MS:
                return False
            with contextlib.suppress(FileNotFoundError):
                coordinator.fs.delete(lock)  # left by a killed compaction
    return False


def _compact(coordinator: Coordinator, now: int, retention: int) -> Compacted:
    summary = read_summary(coordinator)
    _finish(coordinator, summary)  # a compaction killed mid-way: its range first
    newest = roll_forward(coordinator) - 1  # publishes the newest: all below are published
    horizon = min(newest, _prepared_horizon(coordinator))
    # Never shorter than TRUSTED_MS: a process that saw a record as the newest within it
    # probes from that record without checking it still exists.
    cutoff = now - max(retention, TRUSTED_MS)
    stop = summary.lowest_live
    kept: list[int] = list(summary.kept_decisions)
    records: list[GroupRecord] = []
    record = coordinator.read(stop) if stop < horizon else None
    while record is not None and stop < horizon:
        # A record goes once it and the record after it (written after anyone saw it as the
        # newest) are older than the cutoff; timestamps grow with positions (up to clock
        # skew), so the first younger one ends the range.
        following = coordinator.read(stop + 1)
        if record.timestamp >= cutoff or following.timestamp >= cutoff:
            break
        records.append(record)
        record, stop = following, stop + 1
    if not records:
        return Compacted(summary.lowest_live, summary.lowest_live, 0, summary)
    for record in records:
        if record.prepared_outcome is not None:
            # COMMIT PREPARED again must find its decision: moved to kept/ (rewriting it
            # after a crash writes the same bytes).
            coordinator.fs.write(coordinator.kept_path(record.position), record.encode())
            kept.append(record.position)
        else:
            for participant in record.participants:  # verify, do not trust the invariant
                publish_participant(participant)
    pending = CompactionSummary(
        lowest_live=stop,
        deleting_from=summary.lowest_live,
        compacted=summary.compacted + len(records),
        newest_compacted_ms=max(r.timestamp for r in records),
        kept_decisions=tuple(kept),
    )
    _write_summary(coordinator, pending)
    crash_point("mtx_compaction_summary")
    deleted = _finish(coordinator, pending)
    done = read_summary(coordinator)
    return Compacted(summary.lowest_live, stop, deleted, done)


def _finish(coordinator: Coordinator, summary: CompactionSummary) -> int:
    """Delete the summary's pending range (ascending), then record it done."""
    if summary.deleting_from >= summary.lowest_live:
        return 0
    deleted = 0
    for position in range(summary.deleting_from, summary.lowest_live):
        with contextlib.suppress(FileNotFoundError):  # idempotent: a retry re-deletes
            coordinator.fs.delete(coordinator.record_path(position))
            deleted += 1
        crash_point("mtx_compaction_delete")
    _write_summary(coordinator, replace(summary, deleting_from=summary.lowest_live))
    return deleted


def _write_summary(coordinator: Coordinator, summary: CompactionSummary) -> None:
    coordinator.fs.write(f"{coordinator.root}/{SUMMARY_NAME}", summary.encode())
    coordinator.note_lowest_live(summary.lowest_live)


def _prepared_horizon(coordinator: Coordinator) -> int:
    """The lowest position an undecided prepared transaction may need (its decideFrom);
    a decided one without its ``decided`` marker gets it now, so it never holds us back."""
    decided = decided_ids(coordinator)
    horizon = 2**62
    for prepared_id in prepared_ids(coordinator):
        if prepared_id in decided:
            continue
        try:
            record = read_prepared(coordinator, prepared_id)
            decision = find_decision(coordinator, record)
        except (OSError, TxSqlError):
            logger.debug("prepared %s unreadable; compaction stops", prepared_id, exc_info=True)
            return -1
        if decision is None:
            horizon = min(horizon, record.decide_from)
        else:
            mark_decided(coordinator, decision)
    return horizon


def maybe_compact(coordinator: Coordinator, position: int, now: int, retention: int) -> None:
    """After-commit: compact every COMPACT_INTERVAL positions; best effort (a failure is
    retried at the next interval, and compaction never changes what a reader sees)."""
    if position <= 0 or position % COMPACT_INTERVAL != 0:
        return
    try:
        compact_coordinator(coordinator, now, retention)
    except Exception:
        logger.debug("coordinator compaction of %s failed", coordinator.root, exc_info=True)


def newest_records(coordinator: Coordinator, limit: int) -> list[GroupRecord]:
    """The newest ``limit`` records, newest first, never below the lowest live position
    (``SHOW TRANSACTIONS``; the summary stands for the compacted rest)."""
    latest = coordinator.latest_position()
    lowest = max(-1, latest - limit, read_summary(coordinator).lowest_live - 1)
    return [coordinator.read(position) for position in range(latest, lowest, -1)]
