"""Commit timestamps (mtime with monotonic adjustment, in-commit timestamps) and history."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from txsql.errors import VersionNotFoundError
from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.log.history import (
    commit_timestamps,
    history,
    monotonic_timestamps,
    version_at_timestamp,
)
from txsql.storage import LogStore, MemoryFileIO

ICT_ON = {
    "delta.enableInCommitTimestamps": "true",
    "delta.inCommitTimestampEnablementVersion": "2",
    "delta.inCommitTimestampEnablementTimestamp": "5000",
}


def build(mtimes: list[int], icts: dict[int, int] | None = None) -> LogStore:
    """Commit v gets file mtime ``mtimes[v]``; with ``icts`` ICT is enabled from version 2."""
    fs = MemoryFileIO()
    store = LogStore("/t", fs)
    for v, mtime in enumerate(mtimes):
        ict = (icts or {}).get(v)
        actions: list = [CommitInfo(timestamp=mtime, operation=f"OP{v}", in_commit_timestamp=ict)]
        if v == 0:
            actions += [Protocol(1, 7, None, ("inCommitTimestamp",)), Metadata("m", "{}")]
        if icts and v == 2:
            actions.append(Metadata("m", "{}", configuration=ICT_ON))
        actions.append(AddFile(f"f{v}", {}, 1, 0))
        store.write_if_absent(v, encode_commit(actions))
        fs.set_modification_time(store.log_path(f"{v:020d}.json"), mtime)
    return store


def test_monotonic_adjustment() -> None:
    assert monotonic_timestamps([5, 5, 5]) == [5, 6, 7]
    assert monotonic_timestamps([]) == []
    store = build([1000, 900, 3000])
    assert commit_timestamps(store) == {0: 1000, 1: 1001, 2: 3000}


@pytest.mark.parametrize(
    ("ts", "version"), [(1000, 0), (1999, 0), (2000, 1), (2500, 1), (3000, 2), (10**13, 2)]
)
def test_version_at_timestamp(ts: int, version: int) -> None:
    assert version_at_timestamp(build([1000, 2000, 3000]), ts) == version


def test_before_first_commit_names_earliest() -> None:
    with pytest.raises(VersionNotFoundError, match=r"earliest available is version 0 at 1970"):
        version_at_timestamp(build([1000, 2000]), 999)


def test_adjusted_timestamps_drive_time_travel() -> None:
    store = build([1000, 900, 3000])  # v1's file claims to be older than v0
    assert version_at_timestamp(store, 1000) == 0
    assert version_at_timestamp(store, 1001) == 1


def test_in_commit_timestamps_override_mtimes_from_enablement() -> None:
    # mtimes of v2..v4 are garbage (e.g. copied files); their ICTs are what counts
    store = build([1000, 2000, 1, 1, 1], icts={2: 5000, 3: 6000, 4: 7000})
    assert commit_timestamps(store) == {0: 1000, 1: 2000, 2: 5000, 3: 6000, 4: 7000}
    assert version_at_timestamp(store, 6500) == 3
    assert version_at_timestamp(store, 4000) == 1
    assert version_at_timestamp(store, 7000) == 4
    snap = DeltaLog(store).snapshot()
    assert snap.commit_timestamp == 7000


def test_history_newest_first_with_limit() -> None:
    store = build([1000, 2000, 3000, 4000])
    records = history(store)
    assert [r.version for r in records] == [3, 2, 1, 0]
    assert [r.timestamp for r in records] == [4000, 3000, 2000, 1000]
    assert records[0].commit_info is not None and records[0].commit_info.operation == "OP3"
    assert [r.version for r in history(store, limit=2)] == [3, 2]


def test_cleaned_up_versions_are_not_time_travel_targets() -> None:
    store = build([1000, 2000, 3000])
    log = DeltaLog(store)
    log.checkpoint(log.snapshot(1))
    store.delete_log_file(f"{0:020d}.json")
    with pytest.raises(VersionNotFoundError, match="version 1"):
        version_at_timestamp(store, 1500)
    assert version_at_timestamp(store, 2000) == 1


def test_simple_table_time_travel_by_timestamp(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_copy("delta-rs/simple_table_with_checkpoint")
    base = 1_700_000_000_000
    for v in range(11):
        t = (base + v * 60_000) / 1000
        os.utime(root / "_delta_log" / f"{v:020d}.json", (t, t))
    log = DeltaLog.for_path(str(root))
    snap = log.snapshot_at_timestamp(base + 5 * 60_000 + 30_000)
    assert snap.version == 5 and len(snap.files) == 6
    assert snap.commit_timestamp == base + 5 * 60_000
    assert log.snapshot_at_timestamp(base + 10**9).version == 10
    with pytest.raises(VersionNotFoundError):
        log.snapshot_at_timestamp(base - 1)
    assert [r.version for r in log.history(limit=3)] == [10, 9, 8]
