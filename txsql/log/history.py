"""Commit timestamps, timestamp-based time travel and DESCRIBE HISTORY.

A commit's timestamp is its in-commit timestamp (ICT) for versions from
``delta.inCommitTimestampEnablementVersion`` on, when ICT is enabled; otherwise the commit
file's modification time, adjusted like Delta's ``DeltaHistoryManager`` so timestamps
strictly increase (clock skew or copied files can make mtimes go backwards).
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from txsql.errors import CorruptLogError, VersionNotFoundError
from txsql.log import properties
from txsql.log.actions import CommitInfo
from txsql.log.replay import commit_info_of, load_snapshot, read_commit_file
from txsql.log.segment import LogListing, earliest_recreatable, find_segment, list_log
from txsql.storage.logstore import LogStore


@dataclass(frozen=True)
class CommitRecord:
    """One row of DESCRIBE HISTORY."""

    version: int
    timestamp: int
    commit_info: CommitInfo | None


def monotonic_timestamps(mtimes: Sequence[int]) -> list[int]:
    """Delta's adjustment: each commit's timestamp is at least the previous one + 1.

    >>> monotonic_timestamps([100, 90, 95, 300])
    [100, 101, 102, 300]
    """
    out: list[int] = []
    for t in mtimes:
        out.append(t if not out or t > out[-1] else out[-1] + 1)
    return out


def ict_enablement_version(configuration: dict[str, str]) -> int | None:
    """First version whose timestamp is an in-commit timestamp; None when ICT is off.

    >>> ict_enablement_version({"delta.enableInCommitTimestamps": "true"})
    0
    >>> ict_enablement_version({"delta.enableInCommitTimestamps": "true",
    ...     "delta.inCommitTimestampEnablementVersion": "5",
    ...     "delta.inCommitTimestampEnablementTimestamp": "1700000000000"})
    5
    >>> ict_enablement_version({}) is None
    True
    """
    if not properties.in_commit_timestamps_enabled(configuration):
        return None
    # Without a recorded enablement version ICT was on since the table was created.
    enablement = properties.in_commit_timestamp_enablement(configuration)
    return enablement[0] if enablement else 0


def _format_ts(ts_ms: int) -> str:
    when = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Timeline:
    """Timestamps of the listed commits, reading ICTs lazily (binary search needs few)."""

    def __init__(self, store: LogStore, listing: LogListing, ict_from: int | None) -> None:
        self.store = store
        self.listing = listing
        self.versions = sorted(listing.commits)
        self.ict_from = ict_from
        mtimes = [listing.commits[v].modification_time for v in self.versions]
        self.adjusted = dict(zip(self.versions, monotonic_timestamps(mtimes), strict=True))
        self._ict: dict[int, int] = {}

    def uses_ict(self, version: int) -> bool:
        return self.ict_from is not None and version >= self.ict_from

    def timestamp(self, version: int, info: CommitInfo | None = None) -> int:
        if not self.uses_ict(version):
            return self.adjusted[version]
        if version not in self._ict:
            ict = info.in_commit_timestamp if info else self._read_ict(version)
            self._ict[version] = ict if ict is not None else self.adjusted[version]
        return self._ict[version]

    def _read_ict(self, version: int) -> int | None:
        # ICT commits carry commitInfo on the first line; parse only that line.
        data = self.store.read_log_file(self.listing.commits[version].name)
        try:
            first = json.loads(data.split(b"\n", 1)[0])
        except ValueError as exc:
            raise CorruptLogError(f"commit {version} has no readable first line") from exc
        value = first.get("commitInfo", {}).get("inCommitTimestamp")
        return value if isinstance(value, int) else None


def _timeline(store: LogStore, configuration: dict[str, str] | None) -> _Timeline:
    listing = list_log(store)
    if configuration is None:
        configuration = load_snapshot(
            store, find_segment(store, None, listing=listing)
        ).configuration
    return _Timeline(store, listing, ict_enablement_version(configuration))


def _last_at_or_before(
    versions: Sequence[int], ts_ms: int, key: Callable[[int], int]
) -> int | None:
    """Largest version whose timestamp <= ts_ms (timestamps increase with version)."""
    lo, hi = 0, len(versions)
    while lo < hi:
        mid = (lo + hi) // 2
        if key(versions[mid]) <= ts_ms:
            lo = mid + 1
        else:
            hi = mid
    return versions[lo - 1] if lo else None


def version_at_timestamp(
    store: LogStore, ts_ms: int, *, configuration: dict[str, str] | None = None
) -> int:
    """The latest version committed at or before ``ts_ms`` (the latest if ``ts_ms`` is later).

    ``configuration`` is the latest table configuration (it says whether and since when
    in-commit timestamps apply); it is read from the log when not given.

    Raises:
        VersionNotFoundError: ``ts_ms`` is before the earliest version that can be rebuilt.
    """
    tl = _timeline(store, configuration)
    start = earliest_recreatable(store, tl.listing)
    if start is None:
        raise VersionNotFoundError(f"no version of the table at {store.root} can be rebuilt")
    versions = tl.versions[bisect.bisect_left(tl.versions, start) :]
    if not versions:
        return start  # only a checkpoint is left; it is the one readable version
    found = _last_at_or_before(versions, ts_ms, tl.timestamp)
    if found is None:
        earliest = tl.timestamp(versions[0])
        raise VersionNotFoundError(
            f"no version of {store.root} existed at {_format_ts(ts_ms)} ({ts_ms} ms); "
            f"the earliest available is version {versions[0]} at {_format_ts(earliest)}"
        )
    return found


def commit_timestamps(
    store: LogStore, *, configuration: dict[str, str] | None = None
) -> dict[int, int]:
    """Timestamp of every listed commit, by version."""
    tl = _timeline(store, configuration)
    return {v: tl.timestamp(v) for v in tl.versions}


def history(
    store: LogStore, limit: int | None = None, *, configuration: dict[str, str] | None = None
) -> list[CommitRecord]:
    """DESCRIBE HISTORY: one record per commit file, newest first, at most ``limit``."""
    tl = _timeline(store, configuration)
    newest_first = tl.versions[::-1]
    if limit is not None:
        newest_first = newest_first[: max(limit, 0)]
    records = []
    for v in newest_first:
        info = commit_info_of(read_commit_file(store, tl.listing.commits[v]))
        records.append(CommitRecord(v, tl.timestamp(v, info), info))
    return records
