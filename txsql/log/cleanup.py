"""Log cleanup (Delta's ``MetadataCleanup``): expired commit and checkpoint files.

After a checkpoint, commit and checkpoint files older than ``delta.logRetentionDuration``
(default 30 days) are deleted, but only those *before the newest checkpoint that is itself
older than the cutoff*: every version from that checkpoint on stays rebuildable, and the
table is never left without a starting point. Timestamps are the commit files' adjusted
modification times (strictly increasing, like Delta), so what is deleted is always a
prefix of the log. Row orders of txsql's sorting compactions (``_txsql_row_orders/``) go
once older than the same cutoff. ``delta.enableExpiredLogCleanup = false`` turns cleanup
off. Time travel to a deleted version then raises
:class:`~txsql.errors.VersionNotFoundError`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time

from txsql.errors import TxSqlError
from txsql.log import properties
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.checkpoint_read import read_checkpoint, read_sidecar_names
from txsql.log.checksum import state_of, verify
from txsql.log.deltalog import DeltaLog
from txsql.log.history import monotonic_timestamps
from txsql.log.segment import CheckpointRef, find_segment, list_log
from txsql.storage.logstore import LogStore
from txsql.storage.paths import ROW_ORDER_DIR, SIDECAR_DIR, classify_log_file

logger = logging.getLogger(__name__)

_VERSIONED = re.compile(r"^(\d{20})\.")
SIDECAR_MIN_AGE_MS = 86_400_000


def cleanup_after_checkpoint(log: DeltaLog, version: int) -> list[str]:
    """Clean up the log after the checkpoint of ``version`` (never raises)."""
    try:
        return cleanup_expired_logs(log)
    except TxSqlError:
        logger.warning("log cleanup after version %d failed", version, exc_info=True)
    except OSError:
        logger.warning("log cleanup after version %d failed", version, exc_info=True)
    return []


def cleanup_expired_logs(log: DeltaLog, now_ms: int | None = None) -> list[str]:
    """Delete expired commits and checkpoints; return the deleted file names, oldest first."""
    store = log.store
    latest = log.snapshot()
    conf = latest.configuration
    if conf.get("delta.enableExpiredLogCleanup", "true").strip().lower() == "false":
        return []
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - properties.log_retention_ms(conf)
    listing = list_log(store)
    versions = sorted(listing.commits)
    mtimes = [listing.commits[v].modification_time for v in versions]
    stamps = dict(zip(versions, monotonic_timestamps(mtimes), strict=True))
    keep_from = None
    for cp in sorted(listing.checkpoints, reverse=True):
        stamp = stamps.get(cp)
        if stamp is None:
            stamp = max(s.modification_time for _, s in listing.checkpoints[cp])
        if stamp > cutoff or cp > latest.version:
            continue
        segment = find_segment(store, cp, listing=listing)
        if segment.checkpoint is not None and segment.checkpoint.version == cp:
            if not _checkpoint_is_sound(store, segment.checkpoint):
                continue  # never delete the commits a damaged checkpoint cannot replace
            keep_from = cp
            break
    if keep_from is None:
        return []
    doomed = []
    for status in store.fs.list_dir(store.log_dir):
        m = _VERSIONED.match(status.name)
        if m is not None and int(m.group(1)) < keep_from:
            doomed.append((int(m.group(1)), status.name))
    deleted = []
    # Oldest first: if we stop half-way the log still starts at a readable prefix.
    for _, name in sorted(doomed):
        try:
            store.fs.delete(store.log_path(name))
        except FileNotFoundError:
            continue
        deleted.append(name)
    return deleted + _delete_orphan_sidecars(store, now_ms) + _delete_old_row_orders(store, cutoff)


def _delete_old_row_orders(store: LogStore, cutoff_ms: int) -> list[str]:
    """Delete the row orders of txsql's sorting compactions older than the log retention:
    only a transaction racing its compaction reads one, and none lives that long."""
    directory = f"{store.root}/{ROW_ORDER_DIR}"
    deleted = []
    for status in store.fs.list_dir(directory):
        if status.modification_time < cutoff_ms:
            with contextlib.suppress(FileNotFoundError):
                store.fs.delete(f"{directory}/{status.name}")
                deleted.append(f"{ROW_ORDER_DIR}/{status.name}")
    return deleted


def _delete_orphan_sidecars(store: LogStore, now_ms: int) -> list[str]:
    """Delete sidecars no remaining V2 checkpoint lists, once a day old (PROTOCOL.md
    "Metadata Cleanup": a younger one may belong to a checkpoint being written now)."""
    sidecars = store.fs.list_dir(store.log_path(SIDECAR_DIR))
    old = [s.name for s in sidecars if s.modification_time < now_ms - SIDECAR_MIN_AGE_MS]
    if not old:
        return []
    kept: set[str] = set()
    for status in store.fs.list_dir(store.log_dir):
        parsed = classify_log_file(status.name)
        if parsed is not None and parsed.kind == "v2":
            kept.update(read_sidecar_names(store, status.name))
    deleted = []
    for name in sorted(set(old) - kept):
        try:
            store.fs.delete(store.log_path(f"{SIDECAR_DIR}/{name}"))
        except FileNotFoundError:
            continue
        deleted.append(f"{SIDECAR_DIR}/{name}")
    return deleted


def _checkpoint_is_sound(store: LogStore, ref: CheckpointRef) -> bool:
    """Whether the checkpoint reads back whole and agrees with its ``.crc`` (if any).

    Cleanup deletes the commits below it, so it must be able to stand in for them.
    """
    try:
        actions = read_checkpoint(store, ref.files)
        protocol = next((a for a in actions if isinstance(a, Protocol)), None)
        metadata = next((a for a in actions if isinstance(a, Metadata)), None)
        adds = [a for a in actions if isinstance(a, AddFile)]
        if protocol is None or metadata is None:
            return False
        verify(store, ref.version, state_of(protocol, metadata, adds), what="checkpoint")
    except (TxSqlError, OSError, ValueError):
        logger.warning("checkpoint %d is unreadable: keeping the commits below it", ref.version)
        return False
    return True
