"""Log compaction files (``x.y.compacted.json``) stand in for the commits they reconcile.

The fixture (delta-kernel-rs) holds compaction files 0-5, 6-10 and 6-15 beside 26 commits.
Every version must rebuild exactly as from its commits alone (a copy of the log without the
compaction files is the oracle), while reading fewer files; a compaction file that reaches
below the checkpoint a version starts from is never used. DuckDB and deltalake agree with
txsql on every version of this table in tests/engine/test_modern_fixtures.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixture_paths import FIXTURES
from txsql.log.deltalog import DeltaLog
from txsql.log.segment import find_segment
from txsql.log.snapshot import Snapshot

TABLE = FIXTURES / "delta-modern" / "compacted-log-files-table"


def _state(snapshot: Snapshot) -> tuple[Any, ...]:
    files = sorted((f.path, f.dv_id or "", f.stats or "", f.size) for f in snapshot.files)
    return (
        files,
        snapshot.metadata,
        snapshot.protocol,
        snapshot.domains,
        snapshot.app_versions,
        snapshot.commit_timestamp,
        snapshot.commit_info,
    )


@pytest.fixture()
def tables(tmp_path: Path) -> tuple[str, str]:
    with_files = tmp_path / "with"
    without = tmp_path / "without"
    shutil.copytree(TABLE, with_files)
    shutil.copytree(TABLE, without)
    for f in (without / "_delta_log").glob("*.compacted.json"):
        f.unlink()
    return str(with_files), str(without)


def test_every_version_equals_its_commits(tables: tuple[str, str]) -> None:
    with_files, without = tables
    latest = DeltaLog.for_path(without).latest_version()
    assert latest == 25
    for version in range(latest + 1):
        # A fresh log each time: a cold load, no cached state to extend.
        ours = DeltaLog.for_path(with_files).snapshot(version)
        plain = DeltaLog.for_path(without).snapshot(version)
        assert _state(ours) == _state(plain), version


def test_compaction_files_save_reads(tables: tuple[str, str], monkeypatch: Any) -> None:
    with_files, _ = tables
    log = DeltaLog.for_path(with_files)
    read: list[str] = []
    original = type(log.store).read_log_file

    def counting(store: Any, name: str) -> bytes:
        read.append(name)
        return original(store, name)

    monkeypatch.setattr(type(log.store), "read_log_file", counting)
    log.snapshot(25)
    compacted = [n for n in read if n.endswith(".compacted.json")]
    assert compacted == [
        "00000000000000000000.00000000000000000005.compacted.json",
        "00000000000000000006.00000000000000000015.compacted.json",
    ]
    commits = [n for n in read if n.endswith(".json") and n not in compacted]
    assert [int(n[:20]) for n in commits] == list(range(16, 26))  # 12 reads instead of 26


def test_a_compaction_below_the_checkpoint_is_not_used(tables: tuple[str, str]) -> None:
    with_files, without = tables
    log = DeltaLog.for_path(with_files)
    log.checkpoint(log.snapshot(8))  # 6-10 and 6-15 now reach below the checkpoint
    segment = find_segment(DeltaLog.for_path(with_files).store, 25)
    assert segment.checkpoint is not None and segment.checkpoint.version == 8
    assert segment.compactions == {}
    assert [f.name for f in segment.replay_files()] == [f"{v:020d}.json" for v in range(9, 26)]
    assert _state(DeltaLog.for_path(with_files).snapshot(25)) == _state(
        DeltaLog.for_path(without).snapshot(25)
    )
