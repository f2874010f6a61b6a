"""The facade over one table's ``_delta_log``: snapshots, time travel, history, checkpoints.

``DeltaLog`` caches the newest snapshot it built together with its replay state; the next
``snapshot()`` call replays only the commits that appeared since (Delta's ``update()``),
after checking that the cached commit file is still the one on disk.

Every snapshot, cached or not, starts from a fresh listing of ``_delta_log`` that
``find_segment`` validates: a missing or empty commit between the checkpoint and the
target, or a lost newest commit, is a CorruptLogError. The cache only saves replay work,
never the check, so a writer can never be handed a stale latest and write into a gap.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from txsql.errors import (
    CorruptLogError,
    TableNotFoundError,
    VersionExistsError,
    VersionNotFoundError,
)
from txsql.log import checksum, features
from txsql.log.actions import Action
from txsql.log.checkpoint import write_checkpoint
from txsql.log.checkpoint_v2 import write_v2_checkpoint, writes_uuid_checkpoints
from txsql.log.codec import decode_commit
from txsql.log.history import CommitRecord, version_at_timestamp
from txsql.log.history import history as _history
from txsql.log.replay import ReplayState, load_verified, replay_commits
from txsql.log.segment import LogListing, LogSegment, list_and_find
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
    def for_path(
        cls,
        location: str,
        storage_options: Mapping[str, object] | None = None,
        hadoop_conf: Mapping[str, str] | None = None,
    ) -> DeltaLog:
        """The log of the table at a path or URI (object stores: see storage/options.py
        for how ``storage_options``, the environment and ``hadoop_conf`` combine)."""
        store = log_store_for(location, storage_options=storage_options, hadoop_conf=hadoop_conf)
        return cls(store)

    @property
    def table_root(self) -> str:
        return self.store.root

    def exists(self) -> bool:
        """Whether ``_delta_log`` holds at least one commit."""
        return self.store.exists()

    def latest_version(self) -> int | None:
        """The newest committed version, or None when there is no table.

        Raises:
            CorruptLogError: the log has a gap, an empty commit or a lost newest commit
                (writers use this answer to pick their next version).
        """
        try:
            return list_and_find(self.store)[1].version
        except TableNotFoundError:
            return None

    def check_next_version(self, version: int) -> None:
        """Refuse to write commit ``version`` unless it directly follows an intact latest.

        The commit loop calls this right before its put-if-absent, so a writer whose read
        snapshot is stale or whose log lost files never writes into a gap.

        Raises:
            VersionExistsError: ``version`` (or a newer one) exists: the writer lost a race.
            CorruptLogError: versions below ``version`` are missing or damaged.
        """
        try:
            latest = list_and_find(self.store)[1].version
        except TableNotFoundError:
            if version == 0:
                return
            raise CorruptLogError(
                f"cannot write commit {version} of {self.store.root}: _delta_log holds no "
                "commits any more (the table's log was deleted)"
            ) from None
        if latest >= version:
            raise VersionExistsError(version)
        if latest < version - 1:
            raise CorruptLogError(
                f"cannot write commit {version} of {self.store.root}: commits "
                f"{latest + 1}..{version - 1} it builds on are missing (newest is {latest})"
            )

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table as of ``version`` (latest when None).

        Raises:
            TableNotFoundError, VersionNotFoundError, CorruptLogError: see ``find_segment``;
                ChecksumMismatchError (a CorruptLogError) when the rebuilt state
                contradicts a ``.crc`` file.
            UnsupportedFeatureError: the table needs a reader feature txsql lacks.
        """
        listing, segment = list_and_find(self.store, version)
        with self._lock:
            cached = self._cached
        built = self._extend(cached, segment, listing) if cached else None
        if built is None:
            snap, state = load_verified(self.store, segment, listing)
            commit = listing.commits.get(snap.version)
        else:
            snap, state, commit = built
        # Refuse before caching: a table we cannot read must never look readable.
        features.check_snapshot_readable(snap.protocol, snap.metadata)
        with self._lock:
            newest = self._cached.snapshot.version if self._cached else -1
            if commit is not None and snap.version >= newest:
                self._cached = _Cached(snap, state, commit)
        return snap

    def _extend(
        self, cached: _Cached, segment: LogSegment, listing: LogListing
    ) -> tuple[Snapshot, ReplayState, FileStatus] | None:
        """Bring the cached snapshot to ``segment.version`` replaying only newer commits.

        ``segment`` was validated from the same listing, so every commit up to its version
        above its checkpoint is present; returns None whenever a cold load is the safer or
        cheaper answer, and the cold path then explains any error.
        """
        base = cached.snapshot.version
        target = segment.version
        if target < base or listing.commits.get(base) != cached.commit:
            return None  # older version, or the log was rewritten or cleaned up under us
        if target == base:
            return cached.snapshot, cached.state, cached.commit
        newer = [listing.commits.get(v) for v in range(base + 1, target + 1)]
        if any(s is None or s.size == 0 for s in newer):
            return None
        cp = segment.checkpoint
        if len(newer) > _MAX_INCREMENTAL and cp is not None and cp.version > base:
            return None  # the newer checkpoint is cheaper than replaying all of these
        commits = [s for s in newer if s is not None]
        state = cached.state.copy()
        info, last = replay_commits(self.store, state, commits)
        mtime = last.modification_time if last else None
        snap = state.snapshot(self.store.root, target, commit_info=info, commit_mtime=mtime)
        if target in listing.checksums:
            try:
                checksum.verify(self.store, target, checksum.TableState.of(snap))
            except CorruptLogError:
                return None  # the cold path verifies again and explains or falls back
        return snap, state, commits[-1]

    def write_checksum(self, snapshot: Snapshot) -> bool:
        """Write ``snapshot``'s ``.crc`` file after its commit; best effort, never raises."""
        return checksum.write_checksum(self.store, snapshot)

    def snapshot_at_timestamp(self, ts_ms: int) -> Snapshot:
        """The table as of the latest commit at or before ``ts_ms`` (ms since the epoch)."""
        latest = self.snapshot()
        version = version_at_timestamp(self.store, ts_ms, configuration=latest.configuration)
        return latest if version == latest.version else self.snapshot(version)

    def history(self, limit: int | None = None) -> list[CommitRecord]:
        """Commit records, newest first (DESCRIBE HISTORY)."""
        return _history(self.store, limit, configuration=self.snapshot().configuration)

    def checkpoint(self, snapshot: Snapshot) -> None:
        """Write a checkpoint of ``snapshot`` (V2 UUID-named where the table's policy says
        so, else classic) and point ``_last_checkpoint`` at it."""
        if writes_uuid_checkpoints(snapshot):
            write_v2_checkpoint(self.store, snapshot)
        else:
            write_checkpoint(self.store, snapshot)

    def read_commits(self, versions: Sequence[int]) -> list[list[Action]]:
        """The actions of several commits, in order (see :meth:`read_commit`).

        On an object store every read is a round trip, so they run concurrently; a
        conflict check over 100 winning commits then costs a few round trips, not 100.
        """
        return self.store.map_reads(self.read_commit, versions)

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
        if not data.strip():
            raise CorruptLogError(f"commit file {self.store.log_path(name)} is empty")
        return decode_commit(data, source=name)
