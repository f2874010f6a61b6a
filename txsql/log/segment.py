"""Choosing which log files make up a version: a checkpoint plus the commits after it.

This follows Delta's ``getLogSegmentForVersion``: ``_last_checkpoint`` is only a hint (it may
be missing, stale or corrupt), so the directory listing is the truth. The newest *complete*
checkpoint at or below the target wins (all parts of a multi-part set; for V2 checkpoints
every referenced sidecar), and the commits after it must be contiguous up to the target.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from txsql.errors import (
    CheckpointFallbackWarning,
    CorruptLogError,
    TableNotFoundError,
    VersionNotFoundError,
)
from txsql.log.checkpoint_read import read_sidecar_names
from txsql.storage.filesystem import FileStatus
from txsql.storage.logstore import LogStore
from txsql.storage.paths import LAST_CHECKPOINT, SIDECAR_DIR, classify_log_file

# Version checksum files (``checksum.py`` reads them; listed here so one listing serves all).
_CHECKSUM = re.compile(r"^(\d{20})\.crc$")
# Log compaction files (PROTOCOL.md "Log Compaction Files"): commits x..y reconciled.
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")

# Spark's CheckpointInstance.Format ordinals: for one version, V2 > multi-part > single.
_KIND_RANK = {"v2": 3, "multipart": 2, "checkpoint": 1}


@dataclass(frozen=True)
class CheckpointRef:
    """One usable checkpoint: its version, kind and ``_delta_log`` file names.

    ``sidecars`` lists sidecar file names (under ``_delta_log/_sidecars``) when they are
    already known from ``_last_checkpoint``; ``None`` means "read them from the file".
    """

    version: int
    kind: str  # "checkpoint" | "multipart" | "v2"
    files: tuple[str, ...]
    sidecars: tuple[str, ...] | None = None


@dataclass(frozen=True)
class LogListing:
    """What one listing of ``_delta_log`` holds, classified."""

    commits: dict[int, FileStatus]
    checkpoints: dict[int, list[tuple[str, FileStatus]]]  # version -> (kind, file)
    hint: dict[str, Any] | None = None
    sidecars: frozenset[str] = field(default_factory=frozenset)
    checksums: frozenset[int] = field(default_factory=frozenset)  # versions with a .crc
    # (first, last) version -> a log compaction file reconciling commits first..last
    compactions: dict[tuple[int, int], FileStatus] = field(default_factory=dict)

    @property
    def latest_commit(self) -> int | None:
        return max(self.commits) if self.commits else None


@dataclass(frozen=True)
class LogSegment:
    """The files needed to rebuild ``version``: a checkpoint (or none) and later commits.

    ``commits`` holds the statuses of commits ``checkpoint.version + 1 .. version`` in order;
    ``last_commit`` is the status of commit ``version`` itself when its file exists (its
    commitInfo and modification time give the snapshot's timestamp).
    """

    version: int
    checkpoint: CheckpointRef | None
    commits: tuple[FileStatus, ...]
    last_commit: FileStatus | None
    # Log compaction files fully inside the commits' range, (first, last) -> file.
    compactions: dict[tuple[int, int], FileStatus] = field(default_factory=dict)

    @property
    def commit_versions(self) -> tuple[int, ...]:
        start = self.checkpoint.version + 1 if self.checkpoint else 0
        return tuple(range(start, start + len(self.commits)))

    def replay_files(self) -> list[FileStatus]:
        """The files to replay after the checkpoint, in order: each run of commits a log
        compaction file covers is replaced by that one file (the longest run from each
        position), the rest are the commits themselves. The result equals replaying every
        commit: a compaction file holds exactly the reconciled actions of its commits."""
        versions = self.commit_versions
        by_start: dict[int, tuple[int, FileStatus]] = {}
        for (first, last), status in self.compactions.items():
            if first in by_start and by_start[first][0] >= last:
                continue
            by_start[first] = (last, status)
        out: list[FileStatus] = []
        position = 0
        while position < len(versions):
            found = by_start.get(versions[position])
            if found is not None and found[0] <= versions[-1] and found[0] > versions[position]:
                out.append(found[1])
                position += found[0] - versions[position] + 1
            else:
                out.append(self.commits[position])
                position += 1
        return out


def read_last_checkpoint(store: LogStore) -> dict[str, Any] | None:
    """Parse ``_last_checkpoint``; ``None`` when missing or unreadable (it is only a hint)."""
    try:
        data = store.read_log_file(LAST_CHECKPOINT)
    except (FileNotFoundError, IsADirectoryError):
        return None
    try:
        hint = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(hint, dict) or not isinstance(hint.get("version"), int):
        return None
    return hint


def list_log(store: LogStore) -> LogListing:
    """List and classify ``_delta_log`` (commits, checkpoints, sidecars, the hint)."""
    commits: dict[int, FileStatus] = {}
    checkpoints: dict[int, list[tuple[str, FileStatus]]] = {}
    checksums: set[int] = set()
    compactions: dict[tuple[int, int], FileStatus] = {}
    has_v2 = False
    for status in store.fs.list_dir(store.log_dir):
        parsed = classify_log_file(status.name)
        if parsed is None:
            if m := _CHECKSUM.match(status.name):
                checksums.add(int(m.group(1)))
            elif (m := _COMPACTED.match(status.name)) and status.size > 0:
                compactions[(int(m.group(1)), int(m.group(2)))] = status
            continue
        if parsed.kind == "commit":
            commits[parsed.version] = status
        else:
            has_v2 = has_v2 or parsed.kind == "v2"
            checkpoints.setdefault(parsed.version, []).append((parsed.kind, status))
    sidecars: frozenset[str] = frozenset()
    if has_v2:
        # Only V2 checkpoints reference sidecars; skip the extra listing otherwise.
        listed = store.fs.list_dir(store.log_path(SIDECAR_DIR))
        sidecars = frozenset(s.name for s in listed)
    hint = read_last_checkpoint(store) if checkpoints else None
    return LogListing(commits, checkpoints, hint, sidecars, frozenset(checksums), compactions)


def _complete_checkpoint(
    store: LogStore, listing: LogListing, version: int
) -> CheckpointRef | None:
    """The best complete checkpoint at ``version``, or None if every candidate is broken."""
    candidates = sorted(
        listing.checkpoints.get(version, []), key=lambda c: _KIND_RANK[c[0]], reverse=True
    )
    for kind, status in candidates:
        if kind == "checkpoint":
            return CheckpointRef(version, kind, (status.name,))
        if kind == "multipart":
            parts = _multipart_set(listing, version, status.name)
            if parts is not None:
                return CheckpointRef(version, kind, parts)
        elif kind == "v2":
            sidecars = _v2_sidecars(store, listing, status.name)
            if sidecars is not None and all(s in listing.sidecars for s in sidecars):
                return CheckpointRef(version, kind, (status.name,), sidecars)
    return None


def _multipart_set(listing: LogListing, version: int, name: str) -> tuple[str, ...] | None:
    """All part names of the set ``name`` belongs to, or None when a part is missing."""
    parsed = classify_log_file(name)
    assert parsed is not None
    names = {
        s.name
        for kind, s in listing.checkpoints.get(version, [])
        if kind == "multipart" and (p := classify_log_file(s.name)) and p.parts == parsed.parts
    }
    expected = tuple(
        f"{version:020d}.checkpoint.{i:010d}.{parsed.parts:010d}.parquet"
        for i in range(1, parsed.parts + 1)
    )
    return expected if all(n in names for n in expected) else None


def _v2_sidecars(store: LogStore, listing: LogListing, name: str) -> tuple[str, ...] | None:
    """Sidecar names a V2 checkpoint references (from the hint when it describes this file)."""
    hint = listing.hint
    v2 = hint.get("v2Checkpoint") if hint else None
    if isinstance(v2, dict) and v2.get("path") == name:
        files = v2.get("sidecarFiles") or []
        return tuple(str(f["path"]).rsplit("/", 1)[-1] for f in files if isinstance(f, dict))
    try:
        return read_sidecar_names(store, name)
    except (CorruptLogError, FileNotFoundError):
        return None


def find_segment(
    store: LogStore, version: int | None = None, *, listing: LogListing | None = None
) -> LogSegment:
    """Choose the checkpoint and commits that rebuild ``version`` (latest when None).

    Every commit between the chosen checkpoint and ``version`` must be listed and non-empty,
    and for the latest version no checksum file may name a newer version: otherwise the
    log has lost a commit, and building on it (above all, writing the next version into a
    gap) would hide the damage.

    Raises:
        TableNotFoundError: ``_delta_log`` holds no commits or checkpoints.
        VersionNotFoundError: ``version`` is newer than the latest, or older than the
            earliest version the remaining files can rebuild.
        CorruptLogError: a commit between the checkpoint and ``version`` is missing or
            empty, or the newest commits vanished.
    """
    listing = listing if listing is not None else list_log(store)
    if not listing.commits and not listing.checkpoints:
        raise TableNotFoundError(f"no Delta table at {store.root} (no commits in _delta_log)")
    latest = max([*listing.commits, *listing.checkpoints])
    target = latest if version is None else version
    newest_checksum = max(listing.checksums, default=-1)
    if target == latest and newest_checksum > latest:
        # A checksum is only written after its commit landed: that commit was lost. (An
        # older version stays readable: only "what is the latest" is in doubt.)
        raise CorruptLogError(
            f"commit {_range(latest + 1, newest_checksum)} of {store.root} is missing: "
            f"{_checksum_file(newest_checksum)} exists but the newest commit is {latest}"
        )
    if target > latest or target < 0:
        raise VersionNotFoundError(
            f"version {target} does not exist; {_available(store, listing, latest)}"
        )
    checkpoint = None
    incomplete: list[int] = []
    # Newest first; the hint only matters through the listing (a stale hint is harmless).
    for cp_version in sorted((v for v in listing.checkpoints if v <= target), reverse=True):
        checkpoint = _complete_checkpoint(store, listing, cp_version)
        if checkpoint is not None:
            break
        incomplete.append(cp_version)
    if incomplete:
        base = f"checkpoint {checkpoint.version}" if checkpoint else "the commits"
        warnings.warn(
            CheckpointFallbackWarning(
                f"checkpoint {incomplete[0]} of {store.root} is incomplete (a part or "
                f"sidecar is missing or unreadable); version {target} is rebuilt from {base}"
            ),
            stacklevel=3,
        )
    start = checkpoint.version + 1 if checkpoint else 0
    if checkpoint is None and 0 not in listing.commits:
        earliest = earliest_recreatable(store, listing)
        if earliest is None:
            raise CorruptLogError(
                f"missing commit 0 of {store.root} and no complete checkpoint to start from"
            )
        raise VersionNotFoundError(
            f"version {target} cannot be rebuilt: its commits were cleaned up; "
            f"{_available(store, listing, latest)}"
        )
    commits = [_usable_commit(store, listing, v, target) for v in range(start, target + 1)]
    last = listing.commits.get(target)
    if last is not None and last.size == 0:
        raise CorruptLogError(f"commit file {store.log_path(last.name)} is empty (0 bytes)")
    inside = {
        span: status
        for span, status in listing.compactions.items()
        if start <= span[0] < span[1] <= target
    }
    return LogSegment(target, checkpoint, tuple(commits), last, inside)


def list_and_find(store: LogStore, version: int | None = None) -> tuple[LogListing, LogSegment]:
    """List ``_delta_log`` and choose the segment of ``version`` (latest when None).

    A directory listing is not atomic: one taken while other writers add commits and
    checksum files can show a newer file without an older one. So an apparent gap is
    confirmed by a second listing; only a gap both listings show is corruption.
    """
    listing = list_log(store)
    try:
        return listing, find_segment(store, version, listing=listing)
    except CorruptLogError:
        again = list_log(store)
        if again.commits == listing.commits and again.checksums == listing.checksums:
            raise
        return again, find_segment(store, version, listing=again)


def _usable_commit(store: LogStore, listing: LogListing, v: int, target: int) -> FileStatus:
    status = listing.commits.get(v)
    if status is None:
        raise CorruptLogError(
            f"missing commit {v} in {store.log_dir} (needed to rebuild version {target})"
        )
    if status.size == 0:
        # A commit always holds at least its commitInfo: 0 bytes is a torn or zeroed write.
        raise CorruptLogError(f"commit file {store.log_path(status.name)} is empty (0 bytes)")
    return status


def fallback_segments(
    store: LogStore, listing: LogListing, primary: LogSegment
) -> Iterator[LogSegment]:
    """Other ways to rebuild ``primary.version`` when its checkpoint is unusable.

    Older complete checkpoints first, then a replay of every commit from version 0; only
    those whose commits are all still listed and non-empty are yielded.
    """
    if primary.checkpoint is None:
        return
    target = primary.version
    below = primary.checkpoint.version
    older = sorted((v for v in listing.checkpoints if v < below), reverse=True)
    for cp_version in [*older, -1]:
        if not all(
            v in listing.commits and listing.commits[v].size > 0
            for v in range(cp_version + 1, below + 1)
        ):
            continue
        checkpoint = None
        if cp_version >= 0:
            checkpoint = _complete_checkpoint(store, listing, cp_version)
            if checkpoint is None:
                continue
        commits = tuple(listing.commits[v] for v in range(cp_version + 1, below + 1))
        yield LogSegment(target, checkpoint, commits + primary.commits, primary.last_commit)


def _range(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}..{last}"


def _checksum_file(version: int) -> str:
    return f"{version:020d}.crc"


def earliest_recreatable(store: LogStore, listing: LogListing) -> int | None:
    """The oldest version the remaining files can rebuild (None: none can)."""
    if 0 in listing.commits:
        return 0
    for v in sorted(listing.checkpoints):
        if _complete_checkpoint(store, listing, v) is not None:
            return v
    return None


def _available(store: LogStore, listing: LogListing, latest: int) -> str:
    earliest = earliest_recreatable(store, listing)
    if earliest is None:
        return "no version of this table can be rebuilt"
    return f"available versions are {earliest}..{latest}"
