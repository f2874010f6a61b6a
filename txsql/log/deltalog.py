"""The facade over one table's ``_delta_log``: snapshots, time travel, history, checkpoints.

``DeltaLog`` caches the newest snapshot it built together with its replay state; the next
``snapshot()`` call replays only the commits that appeared since (Delta's ``update()``),
after checking that the cached commit file is still the one on disk.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from txsql.errors import VersionNotFoundError
from txsql.log import features
from txsql.log.actions import Action
from txsql.log.checkpoint import write_checkpoint
from txsql.log.codec import decode_commit
from txsql.log.history import CommitRecord, version_at_timestamp
from txsql.log.history import history as _history
from txsql.log.replay import ReplayState, replay_commits, replay_segment
from txsql.log.segment import find_segment, list_log
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import FileStatus
from txsql.storage.logstore import LogStore, log_store_for
from txsql.storage.paths import commit_name

# Beyond this many new commits a cold load (from a newer checkpoint) is cheaper.
_MAX_INCREMENTAL = 100


@dataclass(frozen=True)
class _Cached:
    snapshot: Snapshot
    state: ReplayState  # never mutated: incremental updates work on a copy
    commit: FileStatus  # the listing entry of snapshot.version's commit when it was read


class DeltaLog:
    """Reads the log of the table ``store`` points at.

    >>> from txsql.storage import MemoryFileIO
    >>> DeltaLog(LogStore("/t", MemoryFileIO())).exists()
    False
    """

    def __init__(self, store: LogStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._cached: _Cached | None = None

    @classmethod
    def for_path(cls, location: str) -> DeltaLog:
        """The log of the table at a local path or ``file:`` URI."""
        return cls(log_store_for(location))

    @property
    def table_root(self) -> str:
        return self.store.root

    def exists(self) -> bool:
        """Whether ``_delta_log`` holds at least one commit."""
        return self.store.exists()

    def latest_version(self) -> int | None:
        """The newest committed version, or None when there is no table."""
        return self.store.latest_version()

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table as of ``version`` (latest when None).

        Raises:
            TableNotFoundError, VersionNotFoundError, CorruptLogError: see ``find_segment``.
            UnsupportedFeatureError: the table needs a reader feature txsql lacks.
        """
        with self._lock:
            cached = self._cached
        built = self._extend(cached, version) if cached else None
        if built is None:
            listing = list_log(self.store)
            segment = find_segment(self.store, version, listing=listing)
            snap, state = replay_segment(self.store, segment)
            commit = listing.commits.get(snap.version)
        else:
            snap, state, commit = built
        # Refuse before caching: a table we cannot read must never look readable.
        features.check_readable(snap.protocol)
        with self._lock:
            newest = self._cached.snapshot.version if self._cached else -1
            if commit is not None and snap.version >= newest:
                self._cached = _Cached(snap, state, commit)
        return snap

    def _extend(
        self, cached: _Cached, version: int | None
    ) -> tuple[Snapshot, ReplayState, FileStatus] | None:
        """Bring the cached snapshot to ``version`` by replaying only newer commits.

        Probes commit files one by one instead of listing ``_delta_log`` (which holds
        thousands of files on a busy table); returns None whenever a cold load is the
        safer or cheaper answer, and the cold path then explains any error.
        """
        base = cached.snapshot.version
        if version is not None and version < base:
            return None
        if self._stat_commit(base) != cached.commit:
            return None  # the log was rewritten or cleaned up under us
        newer: list[FileStatus] = []
        v = base + 1
        while version is None or v <= version:
            status = self._stat_commit(v)
            if status is None:
                break
            newer.append(status)
            if len(newer) > _MAX_INCREMENTAL:
                return None  # a newer checkpoint is cheaper than replaying all of these
            v += 1
        if version is not None and base + len(newer) < version:
            return None
        if not newer:
            return cached.snapshot, cached.state, cached.commit
        state = cached.state.copy()
        info, last = replay_commits(self.store, state, newer)
        mtime = last.modification_time if last else None
        snap = state.snapshot(
            self.store.root, base + len(newer), commit_info=info, commit_mtime=mtime
        )
        return snap, state, newer[-1]

    def _stat_commit(self, version: int) -> FileStatus | None:
        try:
            return self.store.commit_status(version)
        except FileNotFoundError:
            return None

    def snapshot_at_timestamp(self, ts_ms: int) -> Snapshot:
        """The table as of the latest commit at or before ``ts_ms`` (ms since the epoch)."""
        latest = self.snapshot()
        version = version_at_timestamp(self.store, ts_ms, configuration=latest.configuration)
        return latest if version == latest.version else self.snapshot(version)

    def history(self, limit: int | None = None) -> list[CommitRecord]:
        """Commit records, newest first (DESCRIBE HISTORY)."""
        return _history(self.store, limit, configuration=self.snapshot().configuration)

    def checkpoint(self, snapshot: Snapshot) -> None:
        """Write a classic checkpoint of ``snapshot`` and point ``_last_checkpoint`` at it."""
        write_checkpoint(self.store, snapshot)

    def read_commit(self, version: int) -> list[Action]:
        """The actions of commit ``version`` (including its commitInfo).

        Raises:
            VersionNotFoundError: the commit file does not exist.
            CorruptLogError: the file is not valid commit JSON.
        """
        name = commit_name(version)
        try:
            data = self.store.read_commit(version)
        except FileNotFoundError:
            raise VersionNotFoundError(
                f"commit {version} does not exist in {self.store.log_dir}"
            ) from None
        return decode_commit(data, source=name)
