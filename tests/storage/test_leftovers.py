"""Stale temp files and staging folders of killed writers are removed; live ones are not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import CRASH_ENV
from txsql.storage.leftovers import (
    STAGING_DIR,
    STAGING_WINDOW_ENV,
    STAGING_WINDOW_MS,
    remove_stale_leftovers,
    staging_window_ms,
)
from txsql.txn.transaction import Transaction

REPO = Path(__file__).resolve().parents[2]
HOUR = 3600
DAY = 24 * HOUR  # older than the staging window
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


def _touch(path: Path, age_s: float, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def _age_dir(path: Path, age_s: float) -> None:
    then = time.time() - age_s
    for parent, dirs, files in os.walk(path, topdown=False):
        for name in dirs + files:
            os.utime(os.path.join(parent, name), (then, then))
    os.utime(path, (then, then))


def _layout(root: Path) -> dict[str, Path]:
    log = root / "_delta_log"
    paths = {
        "old_commit_tmp": _touch(log / f".00000000000000000003.json.{'a' * 32}.tmp", 2 * HOUR),
        "young_commit_tmp": _touch(log / f".00000000000000000004.json.{'b' * 32}.tmp", 60),
        "old_dv_tmp": _touch(root / f".deletion_vector_x.bin.{'c' * 32}.tmp", 2 * HOUR),
        "commit": _touch(log / "00000000000000000099.json", 2 * HOUR, b"{}\n"),
        "crc": _touch(log / ".00000000000000000000.crc", 2 * HOUR),  # not ours: kept
        "user_hidden": _touch(root / ".keep.tmp", 2 * HOUR),  # no uuid: not ours, kept
        "data": _touch(root / "part-0.parquet", 2 * HOUR),
    }
    old_stage = root / STAGING_DIR / ("1" * 32)
    _touch(old_stage / "_temporary" / "0" / "part-00000.parquet", 0)
    _age_dir(old_stage, 2 * DAY)
    live_stage = root / STAGING_DIR / ("2" * 32)
    _touch(live_stage / "_temporary" / "0" / "part-00000.parquet", 2 * DAY)
    _touch(live_stage / "_temporary" / "0" / "part-00001.parquet", 5)  # still being written
    _age_dir(live_stage / "_temporary", 2 * DAY)  # only the new file is young
    os.utime(live_stage / "_temporary" / "0" / "part-00001.parquet")
    # Untouched for two hours: a slow statement's, not yet a dead one's (window: a day).
    slow_stage = root / STAGING_DIR / ("4" * 32)
    _touch(slow_stage / "part-00000.parquet", 0)
    _age_dir(slow_stage, 2 * HOUR)
    paths["old_stage"], paths["live_stage"] = old_stage, live_stage
    paths["slow_stage"] = slow_stage
    return paths


def test_staging_window_is_a_day_unless_tests_shorten_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert staging_window_ms() == STAGING_WINDOW_MS == DAY * 1000
    monkeypatch.setenv(STAGING_WINDOW_ENV, "0")
    assert staging_window_ms() == 0
    monkeypatch.setenv(STAGING_WINDOW_ENV, "soon")  # unreadable: never shortened by accident
    assert staging_window_ms() == STAGING_WINDOW_MS


def test_removes_only_stale_txsql_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "t"
    paths = _layout(root)
    removed = remove_stale_leftovers(str(root))
    gone = {k for k, p in paths.items() if not p.exists()}
    assert gone == {"old_commit_tmp", "old_dv_tmp", "old_stage"}
    assert set(removed.temp_files) == {str(paths[k]) for k in ("old_commit_tmp", "old_dv_tmp")}
    assert removed.staging_dirs == (str(paths["old_stage"]),)


def test_threshold_is_configurable_and_missing_table_is_fine(tmp_path: Path) -> None:
    root = tmp_path / "t"
    paths = _layout(root)
    remove_stale_leftovers(str(root), max_age_ms=10 * DAY * 1000)
    assert all(p.exists() for p in paths.values())
    assert remove_stale_leftovers(str(tmp_path / "nothing")).temp_files == ()


def test_a_commit_that_checkpoints_cleans_up(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_path(str(root))
    conf = {"delta.checkpointInterval": "2"}
    with Transaction(log) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="l", schema_string=SCHEMA, configuration=conf)])
        txn.commit("CREATE TABLE")
    paths = _layout(root)
    paths["commit"].unlink()  # a fake commit 99 would make version 99 the latest
    for version in (1, 2):
        name = f"part-{version}.parquet"
        pq.write_table(pa.table({"id": pa.array([version], pa.int64())}), root / name)
        with Transaction(log) as txn:
            txn.stage([AddFile(name, {}, (root / name).stat().st_size, 0)])
            txn.commit("WRITE")
        # every commit: the log's stale temp files and dead staging folders
        assert not paths["old_commit_tmp"].exists() and not paths["old_stage"].exists()
        # the table root's DV temp files need a listing of the root: with a checkpoint
        assert paths["old_dv_tmp"].exists() == (version == 1)
    assert paths["live_stage"].exists() and paths["slow_stage"].exists()
    assert paths["young_commit_tmp"].exists()


def test_the_next_writer_removes_what_a_killed_one_left(tmp_path: Path) -> None:
    """A writer killed between its commit's temp file and the link, and a Spark write killed
    mid-job: the next commit removes the temp file and the staging folder once stale."""
    root = tmp_path / "t"
    env = {**os.environ, CRASH_ENV: "commit_temp_written"}
    create = f"from tests.crash_writer import create_table; create_table({str(root)!r})"
    subprocess.run([sys.executable, "-c", create], cwd=REPO, check=True, timeout=120)
    killed = subprocess.run(
        [sys.executable, "-m", "tests.crash_writer", str(root), "1", "7"],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    (temp,) = (root / "_delta_log").glob(".*.tmp")
    dead_stage = root / STAGING_DIR / ("5" * 32)
    _touch(dead_stage / "_temporary" / "0" / "part-00000.parquet", 0)
    log = DeltaLog.for_path(str(root))
    version = log.latest_version()
    # Young leftovers may be a live writer's: the next commit leaves them alone.
    _commit_one(log, root, "part-a.parquet")
    assert temp.exists() and dead_stage.exists()
    _age_dir(dead_stage, 2 * DAY)
    then = time.time() - 2 * HOUR
    os.utime(temp, (then, then))
    _commit_one(log, root, "part-b.parquet")
    assert not temp.exists() and not dead_stage.exists()
    assert log.latest_version() == (version or 0) + 2
    assert len(log.snapshot().files) == 2


def _commit_one(log: DeltaLog, root: Path, name: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("amount", pa.int64())])
    pq.write_table(pa.table({"id": [1], "amount": [1]}, schema=schema), root / name)
    with Transaction(log) as txn:
        txn.stage([AddFile(name, {}, (root / name).stat().st_size, 0)])
        txn.commit("WRITE", {}, {"amountDelta": 1, "amountTotal": 1})
