"""Optimistic transactions: pin a read snapshot, stage actions, commit with put-if-absent.

A lost race (the version file exists) is not an error by itself: every winning commit is
checked in version order by :mod:`txsql.txn.conflicts`; if none conflicts the staged
actions are rebased onto the newest version and written again. Data files are never
rewritten on retry.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from txsql import __version__
from txsql.errors import CommitRetriesExceededError, TransactionError, VersionExistsError
from txsql.log import features, properties
from txsql.log.actions import Action, AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from txsql.log.checkpoint import should_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.txn.conflicts import ReadSet, WinningCommit, check_winning_commit
from txsql.txn.isolation import IsolationLevel

logger = logging.getLogger(__name__)

ENGINE_INFO = f"txsql/{__version__}"
DEFAULT_MAX_ATTEMPTS = 10_000  # generous: non-conflicting writers must never give up


@dataclass(frozen=True)
class CommitResult:
    """What a successful commit wrote."""

    version: int
    read_version: int | None
    attempts: int
    commit_info: CommitInfo
    actions: tuple[Action, ...]


class Transaction:
    """One optimistic transaction against one table.

    Use it as a context manager: leaving the block without an exception and without an
    explicit commit rolls back (nothing is written), so a failing statement never leaves a
    trace in the log.
    """

    def __init__(
        self,
        log: DeltaLog,
        *,
        isolation: IsolationLevel | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self.log = log
        self.requested_isolation = isolation
        self.max_attempts = max(1, max_attempts)
        self.read_set = ReadSet()
        self.txn_id = str(uuid.uuid4())
        self._snapshot: Snapshot | None = None
        self._pinned = False
        self._actions: list[Action] = []
        self._state = "open"

    # --- reads ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot | None:
        """The read snapshot, pinned at the first call (None for a table not created yet)."""
        if not self._pinned:
            self._snapshot = self.log.snapshot() if self.log.exists() else None
            self._pinned = True
        return self._snapshot

    @property
    def read_version(self) -> int | None:
        snapshot = self.snapshot()
        return snapshot.version if snapshot else None

    def mark_read_whole_table(self) -> None:
        self.read_set.read_whole_table = True

    def mark_files_read(self, paths: Sequence[str]) -> None:
        self.read_set.files.update(paths)

    # --- writes --------------------------------------------------------------------

    def stage(self, actions: Sequence[Action]) -> None:
        self._require_open()
        self._actions.extend(actions)

    @property
    def staged(self) -> tuple[Action, ...]:
        return tuple(self._actions)

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Write the staged actions as the next version, retrying lost races."""
        self._require_open()
        snapshot = self.snapshot()
        self._validate_writable(snapshot)
        read_version = snapshot.version if snapshot else None
        isolation = self._isolation(snapshot)
        blind = self._is_blind_append()
        info = CommitInfo(
            timestamp=None,
            operation=operation,
            operation_parameters={k: _param(v) for k, v in (parameters or {}).items()},
            read_version=read_version,
            isolation_level=isolation.value,
            is_blind_append=blind,
            operation_metrics={k: str(v) for k, v in (metrics or {}).items()},
            engine_info=ENGINE_INFO,
            txn_id=self.txn_id,
        )
        attempt_version = 0 if read_version is None else read_version + 1
        for attempt in range(1, self.max_attempts + 1):
            now = int(time.time() * 1000)
            info = replace(info, timestamp=now, in_commit_timestamp=self._ict(now, snapshot))
            actions = (info, *self._actions)
            try:
                self.log.store.write_if_absent(attempt_version, encode_commit(actions))
            except VersionExistsError:
                winners, attempt_version = self._check_winners(attempt_version, isolation, blind)
                if winners is None:  # our own earlier attempt landed; its response was lost
                    return self._finish(attempt_version, read_version, attempt, info, actions)
                snapshot = self.log.snapshot(attempt_version - 1)
                self._validate_writable(snapshot)
                continue
            return self._finish(attempt_version, read_version, attempt, info, actions)
        raise CommitRetriesExceededError(
            f"gave up committing {operation} after {self.max_attempts} attempts"
        )

    def rollback(self) -> None:
        """Drop the staged actions; nothing was written to the log."""
        self._actions.clear()
        self._state = "rolled back"

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state == "open":
            self.rollback()

    # --- internals -------------------------------------------------------------------

    def _check_winners(
        self, attempt_version: int, isolation: IsolationLevel, blind: bool
    ) -> tuple[list[WinningCommit] | None, int]:
        """Check every commit from ``attempt_version`` on; return the next version to try."""
        latest = self.log.latest_version()
        assert latest is not None and latest >= attempt_version
        winners = []
        for version in range(attempt_version, latest + 1):
            winner = WinningCommit(version, tuple(self.log.read_commit(version)))
            info = winner.commit_info
            if info is not None and info.txn_id == self.txn_id:
                return None, version
            check_winning_commit(winner, self._actions, self.read_set, isolation, blind)
            winners.append(winner)
        return winners, latest + 1

    def _finish(
        self,
        version: int,
        read_version: int | None,
        attempts: int,
        info: CommitInfo,
        actions: tuple[Action, ...],
    ) -> CommitResult:
        self._state = "committed"
        self._maybe_checkpoint(version)
        return CommitResult(version, read_version, attempts, info, actions)

    def _maybe_checkpoint(self, version: int) -> None:
        try:
            snapshot = self.log.snapshot(version)
            if should_checkpoint(version, snapshot.configuration):
                self.log.checkpoint(snapshot)
        except Exception:  # a failed checkpoint never fails a landed commit
            logger.warning("checkpoint at version %d failed", version, exc_info=True)

    def _validate_writable(self, snapshot: Snapshot | None) -> None:
        protocol = next((a for a in self._actions if isinstance(a, Protocol)), None)
        metadata = next((a for a in self._actions if isinstance(a, Metadata)), None)
        if snapshot is not None:
            protocol = protocol or snapshot.protocol
            metadata = metadata or snapshot.metadata
        if protocol is None or metadata is None:
            raise TransactionError(
                "a new table's first commit needs a protocol and a metadata action",
                hint="Create the table with CREATE TABLE first.",
            )
        features.check_writable(protocol, metadata)

    def _isolation(self, snapshot: Snapshot | None) -> IsolationLevel:
        if not any(getattr(a, "data_change", False) for a in self._actions) and all(
            isinstance(a, (AddFile, RemoveFile)) for a in self._actions
        ):
            return IsolationLevel.SNAPSHOT_ISOLATION  # OPTIMIZE, empty commits
        if self.requested_isolation is not None:
            return self.requested_isolation
        conf = snapshot.configuration if snapshot else {}
        return IsolationLevel.parse(properties.isolation_level(conf))

    def _is_blind_append(self) -> bool:
        only_adds = all(not isinstance(a, RemoveFile) for a in self._actions)
        return only_adds and self.read_set.is_empty

    def _ict(self, now: int, snapshot: Snapshot | None) -> int | None:
        conf = snapshot.configuration if snapshot else {}
        staged_metadata = next((a for a in self._actions if isinstance(a, Metadata)), None)
        if staged_metadata is not None:
            conf = staged_metadata.configuration
        if not properties.in_commit_timestamps_enabled(conf):
            return None
        previous = snapshot.commit_timestamp if snapshot else 0
        return max(now, previous + 1)

    def _require_open(self) -> None:
        if self._state != "open":
            raise TransactionError(
                f"this transaction is already {self._state}", hint="Start a new transaction."
            )


def _param(value: Any) -> str:
    """Delta writes operationParameters values as JSON-encoded strings."""
    return value if isinstance(value, str) else json.dumps(value)
