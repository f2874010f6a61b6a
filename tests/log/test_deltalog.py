"""The DeltaLog facade: fixtures, checkpoint use, corruption, features, incremental refresh."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import (
    CorruptLogError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from txsql.log.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.storage import LogStore, MemoryFileIO

NOW = int(time.time() * 1000)


def _state(s: Snapshot) -> tuple:
    """Everything a snapshot says about the table, in comparable form."""
    return (
        s.version,
        s.protocol,
        s.metadata,
        sorted(repr(f) for f in s.files),
        sorted(repr(r) for r in s.tombstones),
        s.app_versions,
        s.domains,
        s.commit_info,
        s.commit_timestamp,
    )


def test_basic_dv_with_checkpoint_uses_checkpoint_40(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_copy("delta-golden/basic-dv-with-checkpoint")
    for v in range(3):  # an early commit gone: only checkpoint 40 + 41..46 can rebuild v46
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    log = DeltaLog.for_path(str(root))
    snap = log.snapshot()
    assert snap.version == 46 and snap.num_records == 454
    assert log.snapshot(15).num_records == 485  # from checkpoint 10
    with pytest.raises(VersionNotFoundError, match=r"10\.\.46"):
        log.snapshot(2)


def test_every_fixture_loads_and_reports_history(fixtures_dir: Path) -> None:
    for group in ("delta-golden", "delta-rs"):
        for root in sorted((fixtures_dir / group).iterdir()):
            if not (root / "_delta_log").is_dir():
                continue
            log = DeltaLog.for_path(str(root))
            assert log.exists()
            snap = log.snapshot()
            assert snap.version == log.latest_version()
            assert log.history(1)[0].version == snap.version


def test_truncated_commit_is_corrupt_and_changes_nothing(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_copy("delta-golden/log-replay-dv-key-cases")
    log = DeltaLog.for_path(str(root))
    before = log.snapshot(2)
    last = root / "_delta_log" / f"{3:020d}.json"
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])
    listing = sorted(p.name for p in (root / "_delta_log").iterdir())
    with pytest.raises(CorruptLogError, match=r"00000000000000000003\.json"):
        log.snapshot()
    with pytest.raises(CorruptLogError):
        DeltaLog.for_path(str(root)).snapshot()
    assert sorted(p.name for p in (root / "_delta_log").iterdir()) == listing
    assert _state(log.snapshot(2)) == _state(before)  # the cache was not polluted
    last.write_bytes(data)
    assert len(log.snapshot().files) == 1


def test_missing_middle_commit(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_copy("delta-golden/table-with-dv-large")
    (root / "_delta_log" / f"{2:020d}.json").unlink()
    with pytest.raises(CorruptLogError, match="missing commit 2"):
        DeltaLog.for_path(str(root)).snapshot()


def test_version_that_never_existed() -> None:
    store = LogStore("/t", MemoryFileIO())
    store.write_if_absent(0, encode_commit([Protocol(1, 2), Metadata("m", "{}")]))
    log = DeltaLog(store)
    with pytest.raises(VersionNotFoundError, match=r"version 7 does not exist"):
        log.snapshot(7)
    with pytest.raises(VersionNotFoundError):
        log.read_commit(7)


def test_unknown_reader_feature_is_refused() -> None:
    store = LogStore("/t", MemoryFileIO())
    proto = Protocol(3, 7, ("deletionVectors", "quantumEntanglement"), ("deletionVectors",))
    store.write_if_absent(0, encode_commit([proto, Metadata("m", "{}")]))
    with pytest.raises(UnsupportedFeatureError, match="quantumEntanglement"):
        DeltaLog(store).snapshot()


def test_missing_table() -> None:
    log = DeltaLog(LogStore("/none", MemoryFileIO()))
    assert not log.exists() and log.latest_version() is None
    with pytest.raises(TableNotFoundError):
        log.snapshot()


def _commit(store: LogStore, v: int) -> None:
    dv = DeletionVectorDescriptor("i", f"inline{v}", 10, v, None)
    actions: list = [CommitInfo(timestamp=v, operation="WRITE")]
    if v == 0:
        actions += [Protocol(1, 2), Metadata("m", "{}")]
    actions.append(AddFile(f"f{v}", {}, 1, 0))
    if v >= 2:  # churn: re-add the previous file with a DV, drop the old key
        actions += [
            RemoveFile(f"f{v - 1}", NOW + v),  # fresh: survives checkpoints
            AddFile(f"f{v - 1}", {}, 1, 0, deletion_vector=dv),
        ]
    if v % 3 == 0:
        actions += [SetTransaction("app", v), DomainMetadata(f"d{v % 2}", str(v), v % 4 == 0)]
    store.write_if_absent(v, encode_commit(actions))


def test_incremental_refresh_equals_cold_load() -> None:
    store = LogStore("/t", MemoryFileIO())
    log = DeltaLog(store)
    for v in range(25):
        _commit(store, v)
        if v % 4 == 0 or v == 24:
            warm = log.snapshot()
            assert _state(warm) == _state(DeltaLog(store).snapshot()), v
        if v == 12:
            log.checkpoint(log.snapshot())
    assert log.snapshot() is log.snapshot()  # unchanged log: the cached snapshot is reused
    assert _state(log.snapshot(20)) == _state(DeltaLog(store).snapshot(20))


def test_read_commit_and_checkpoint_roundtrip() -> None:
    store = LogStore("/t", MemoryFileIO())
    for v in range(12):
        _commit(store, v)
    log = DeltaLog(store)
    assert any(isinstance(a, CommitInfo) for a in log.read_commit(3))
    snap = log.snapshot()
    log.checkpoint(snap)
    for v in range(11):
        store.delete_log_file(f"{v:020d}.json")
    assert _state(DeltaLog(store).snapshot()) == _state(snap)


class _CountingIO(MemoryFileIO):
    def __init__(self) -> None:
        super().__init__()
        self.listings = 0
        self.reads: list[str] = []

    def list_dir(self, path: str) -> list:
        self.listings += 1
        return super().list_dir(path)

    def read(self, path: str) -> bytes:
        self.reads.append(path.rsplit("/", 1)[-1])
        return super().read(path)


def test_refresh_lists_once_and_replays_only_new_commits() -> None:
    fs = _CountingIO()
    store = LogStore("/t", fs)
    for v in range(5):
        _commit(store, v)
    log = DeltaLog(store)
    log.snapshot()
    for v in range(5, 8):
        _commit(store, v)
    fs.listings, fs.reads = 0, []
    # One listing (it is what sees gaps), and only the three new commits are read.
    assert log.snapshot().version == 7 and fs.listings == 1
    assert fs.reads == [f"{v:020d}.json" for v in range(5, 8)]
    # A rewritten commit under the cache forces a cold load.
    store.delete_log_file(f"{7:020d}.json")
    _commit(store, 7)
    fs.set_modification_time(store.log_path(f"{7:020d}.json"), 1)
    fs.reads = []
    assert log.snapshot().version == 7 and len(fs.reads) == 8
