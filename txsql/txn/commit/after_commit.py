"""What every landed commit runs, on every path: autocommit, COMMIT, CREATE, each
participant of a group, COMMIT PREPARED (and, later, maintenance commits).

Best effort: a failure here never fails the commit, which has landed.
"""

from __future__ import annotations

import logging

from txsql.log.checkpoint import should_checkpoint
from txsql.log.cleanup import cleanup_after_checkpoint
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.leftovers import remove_stale_leftovers

logger = logging.getLogger(__name__)


def after_commit(log: DeltaLog, version: int) -> None:
    """The hooks of a landed commit at ``version``: the ``.crc`` checksum, a checkpoint
    when one is due, log cleanup after a checkpoint, and what killed writers left behind."""
    checkpointed = False
    try:
        snapshot: Snapshot = log.snapshot(version)
        log.write_checksum(snapshot)  # best effort: never raises
        if should_checkpoint(version, snapshot.configuration):
            log.checkpoint(snapshot)
            checkpointed = True
    except Exception:  # a failed checkpoint never fails a landed commit
        logger.warning("checkpoint at version %d failed", version, exc_info=True)
    if checkpointed:
        cleanup_after_checkpoint(log, version)  # never raises
    if isinstance(log.store.fs, LocalFileIO):
        # Every commit: temp files in the log and stale staging folders (two small
        # directory listings). The table root's DV temp files need a listing of the
        # root, so that waits for a checkpoint. Never raises.
        remove_stale_leftovers(log.table_root, scan_root=checkpointed)
