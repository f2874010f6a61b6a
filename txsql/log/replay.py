"""Log replay: reconcile a checkpoint and the commits after it into a :class:`Snapshot`.

The rules are the protocol's "Action Reconciliation": the last protocol and metadata win,
the latest ``txn`` per app id and ``domainMetadata`` per domain win (a removed domain is a
tombstone), and file actions are keyed by ``(path, deletion-vector id)`` with the newest
action per key winning — surviving adds are live files, surviving removes are tombstones.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from urllib.parse import unquote

import pyarrow as pa

from txsql.errors import CheckpointFallbackWarning, ChecksumMismatchError, CorruptLogError
from txsql.log import checksum, properties
from txsql.log.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from txsql.log.checkpoint_read import read_checkpoint
from txsql.log.codec import decode_commit
from txsql.log.segment import LogListing, LogSegment, fallback_segments, list_log
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import FileStatus
from txsql.storage.logstore import LogStore

FileKey = tuple[str, "str | None"]


COMPACTED_SUFFIX = ".compacted.json"


def file_key(path: str, dv_id: str | None) -> FileKey:
    """The reconciliation key of a file action; paths compare after URI-decoding.

    >>> file_key("a%20b.parquet", None) == file_key("a b.parquet", None)
    True
    """
    return (unquote(path), dv_id)


class ReplayState:
    """Mutable accumulator of reconciled actions (copy it before reusing a cached one)."""

    __slots__ = ("adds", "domains", "metadata", "protocol", "removes", "txns")

    def __init__(self) -> None:
        self.protocol: Protocol | None = None
        self.metadata: Metadata | None = None
        self.adds: dict[FileKey, AddFile] = {}
        self.removes: dict[FileKey, RemoveFile] = {}
        self.txns: dict[str, SetTransaction] = {}
        self.domains: dict[str, DomainMetadata] = {}

    def copy(self) -> ReplayState:
        """A shallow copy: actions are frozen, so only the dicts need duplicating."""
        other = ReplayState()
        other.protocol, other.metadata = self.protocol, self.metadata
        other.adds, other.removes = dict(self.adds), dict(self.removes)
        other.txns, other.domains = dict(self.txns), dict(self.domains)
        return other

    def apply(self, actions: Iterable[Action]) -> None:
        """Apply actions in log order (checkpoint rows first, then commits ascending)."""
        adds, removes = self.adds, self.removes
        for action in actions:
            # Adds first: this loop runs once per file of a 100k-file checkpoint.
            if isinstance(action, AddFile):
                dv = action.deletion_vector
                key = (unquote(action.path), dv.unique_id if dv else None)
                removes.pop(key, None)
                adds[key] = action
            elif isinstance(action, RemoveFile):
                dv = action.deletion_vector
                key = (unquote(action.path), dv.unique_id if dv else None)
                adds.pop(key, None)
                removes[key] = action
            elif isinstance(action, Metadata):
                self.metadata = action
            elif isinstance(action, Protocol):
                self.protocol = action
            elif isinstance(action, SetTransaction):
                self.txns[action.app_id] = action
            elif isinstance(action, DomainMetadata):
                self.domains[action.domain] = action
            # commitInfo, cdc, checkpointMetadata and sidecar carry no table state.

    def snapshot(
        self,
        table_root: str,
        version: int,
        *,
        commit_info: CommitInfo | None = None,
        commit_mtime: int | None = None,
    ) -> Snapshot:
        """Freeze the state as the :class:`Snapshot` of ``version``."""
        if self.protocol is None or self.metadata is None:
            missing = "protocol" if self.protocol is None else "metaData"
            raise CorruptLogError(f"log of {table_root} has no {missing} action at v{version}")
        return Snapshot(
            table_root=table_root,
            version=version,
            protocol=self.protocol,
            metadata=self.metadata,
            files=tuple(self.adds.values()),
            tombstones=tuple(self.removes.values()),
            app_versions={app: t.version for app, t in self.txns.items()},
            domains={d: m for d, m in self.domains.items() if not m.removed},
            commit_timestamp=commit_timestamp(self.metadata, commit_info, commit_mtime),
            commit_info=commit_info,
            transactions=dict(self.txns),
        )


def commit_timestamp(
    metadata: Metadata, commit_info: CommitInfo | None, commit_mtime: int | None
) -> int:
    """A commit's timestamp: its in-commit timestamp when enabled, else the file mtime."""
    if (
        commit_info is not None
        and commit_info.in_commit_timestamp is not None
        and properties.in_commit_timestamps_enabled(metadata.configuration)
    ):
        return commit_info.in_commit_timestamp
    return commit_mtime or 0


def read_commit_file(store: LogStore, status: FileStatus) -> list[Action]:
    """Decode one commit named by a listing entry (a vanished file is a corrupt log)."""
    try:
        data = store.read_log_file(status.name)
    except FileNotFoundError as exc:
        raise CorruptLogError(f"commit {status.name} disappeared while reading the log") from exc
    if not data.strip():
        # Every commit holds at least one action; an empty file is a torn or zeroed write.
        raise CorruptLogError(f"commit file {store.log_path(status.name)} is empty")
    return decode_commit(data, source=status.name)


def commit_info_of(actions: Iterable[Action]) -> CommitInfo | None:
    """The commitInfo of a decoded commit, if any."""
    for action in actions:
        if isinstance(action, CommitInfo):
            return action
    return None


def replay_commits(
    store: LogStore, state: ReplayState, commits: Iterable[FileStatus]
) -> tuple[CommitInfo | None, FileStatus | None]:
    """Apply ``commits`` in order; return the last one's commitInfo and status."""
    info: CommitInfo | None = None
    last: FileStatus | None = None
    statuses = list(commits)
    # Fetched together (concurrently on object stores), applied strictly in order.
    decoded = store.map_reads(lambda status: read_commit_file(store, status), statuses)
    for status, actions in zip(statuses, decoded, strict=True):
        if status.name.endswith(COMPACTED_SUFFIX):
            # A log compaction file is a set, not a sequence: it may list both the add and
            # the remove of one file that came and went in its range, and the remove is
            # the later fact (delta-kernel-rs's compaction fixture relies on it).
            kept = [a for a in actions if not isinstance(a, RemoveFile)]
            actions = kept + [a for a in actions if isinstance(a, RemoveFile)]
        state.apply(actions)
        info, last = commit_info_of(actions), status
    return info, last


def replay_segment(store: LogStore, segment: LogSegment) -> tuple[Snapshot, ReplayState]:
    """Rebuild the snapshot of ``segment.version``; also return the reusable state.

    No fallback and no checksum checks: :func:`load_verified` adds both.
    """
    state = ReplayState()
    if segment.checkpoint is not None:
        state.apply(read_checkpoint(store, segment.checkpoint.files))
    return _replay_rest(store, segment, state), state


def _replay_rest(store: LogStore, segment: LogSegment, state: ReplayState) -> Snapshot:
    """Apply the segment's commits to ``state`` (checkpoint already applied, log compaction
    files standing in for runs of commits); freeze it."""
    files = segment.replay_files()
    info, last = replay_commits(store, state, files)
    if segment.last_commit is not None and last != segment.last_commit:
        # The snapshot version is the checkpoint's, or a compaction file (which holds no
        # commitInfo) ended the replay: the version's commitInfo lives in its JSON.
        info = commit_info_of(read_commit_file(store, segment.last_commit))
    mtime = segment.last_commit.modification_time if segment.last_commit else None
    return state.snapshot(store.root, segment.version, commit_info=info, commit_mtime=mtime)


class _CheckpointUnusable(Exception):
    """Internal: this segment's checkpoint (or the state built on it) cannot be trusted."""


def _replay_checked(
    store: LogStore, segment: LogSegment, checksums: frozenset[int]
) -> tuple[Snapshot, ReplayState]:
    """Replay ``segment``, verifying checksums; checkpoint trouble becomes _CheckpointUnusable.

    A commit that cannot be decoded is fatal for every way of rebuilding the version, so
    its CorruptLogError propagates unchanged.
    """
    state = ReplayState()
    cp = segment.checkpoint
    if cp is not None:
        try:
            state.apply(read_checkpoint(store, cp.files))
        except (CorruptLogError, pa.ArrowException, OSError, ValueError, KeyError, TypeError) as e:
            why = e.message if isinstance(e, CorruptLogError) else str(e)
            raise _CheckpointUnusable(f"checkpoint {cp.files[0]} is unreadable: {why}") from e
        if state.protocol is None or state.metadata is None:
            raise _CheckpointUnusable(f"checkpoint {cp.files[0]} has no protocol or metaData row")
        if cp.version in checksums:
            try:
                checksum.verify(
                    store,
                    cp.version,
                    checksum.state_of(state.protocol, state.metadata, state.adds.values()),
                    what=f"checkpoint {cp.files[0]}",
                )
            except ChecksumMismatchError as e:
                raise _CheckpointUnusable(e.message) from e
    snap = _replay_rest(store, segment, state)
    if segment.version in checksums:
        try:
            checksum.verify(store, segment.version, checksum.TableState.of(snap))
        except ChecksumMismatchError as e:
            if cp is None:
                raise
            # The checkpoint may have lost rows; an older base can tell (and repair) it.
            raise _CheckpointUnusable(f"{e.message} (built on checkpoint {cp.files[0]})") from e
    return snap, state


def load_verified(
    store: LogStore, segment: LogSegment, listing: LogListing | None = None
) -> tuple[Snapshot, ReplayState]:
    """Rebuild ``segment``, falling back from an unusable checkpoint to older bases.

    An unreadable or checksum-contradicted checkpoint is replaced by an older complete
    checkpoint plus commits, or by replaying every commit, with a
    :class:`CheckpointFallbackWarning`. When no base remains (the older commits were
    cleaned up) the CorruptLogError says so.
    """
    if listing is None:
        listing = list_log(store)
    problems: list[str] = []
    candidates = _candidates(store, segment, listing)
    current: LogSegment | None = next(candidates)
    while current is not None:
        try:
            return _replay_checked(store, current, listing.checksums)
        except _CheckpointUnusable as exc:
            problems.append(str(exc))
            current = next(candidates, None)
            if current is not None:
                warnings.warn(
                    CheckpointFallbackWarning(
                        f"{exc}; rebuilding version {segment.version} of {store.root} from "
                        + (
                            f"checkpoint {current.checkpoint.version}"
                            if current.checkpoint
                            else "all commits since version 0"
                        )
                    ),
                    stacklevel=3,
                )
    raise CorruptLogError(
        f"version {segment.version} of {store.root} cannot be rebuilt: "
        + "; ".join(problems)
        + "; no older checkpoint or run of commits from version 0 can replace it "
        "(the commits before it were cleaned up or are missing or damaged)"
    )


def _candidates(store: LogStore, segment: LogSegment, listing: LogListing) -> Iterator[LogSegment]:
    yield segment
    if segment.checkpoint is not None:
        yield from fallback_segments(store, listing, segment)


def load_snapshot(store: LogStore, segment: LogSegment) -> Snapshot:
    """Cold-load the snapshot a segment describes (verified, with checkpoint fallback)."""
    return load_verified(store, segment)[0]
