"""Through the SQL session: a full disk fails the statement typed, VACUUM clears leftovers."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from tests.storage.faults import WriteFault, inject_write, record_fsyncs, visible_and_hidden
from txsql.errors import DiskFullError
from txsql.log.deltalog import DeltaLog

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def _root(tmp_path: Path) -> Path:
    return next(p.parent for p in tmp_path.rglob("_delta_log"))


def test_delete_on_a_full_disk_fails_and_leaves_the_table(
    session: txsql.Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING) TBLPROPERTIES (delta.enableDeletionVectors = true)"
    )
    synced = record_fsyncs(monkeypatch)
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    monkeypatch.undo()
    root = _root(tmp_path)
    # data files moved out of Spark's staging are synced, with their folder, before commit 1
    data = [p for p in synced if p.startswith(f"{root}/part-") and p.endswith(".parquet")]
    commit = synced.index(next(p for p in synced if ".00000000000000000001.json." in p))
    assert data and synced.index(data[0]) < commit and synced.index(str(root)) < commit
    inject_write(monkeypatch, WriteFault(r"/_delta_log/\.\d{20}\.json\.", budget=10))
    with pytest.raises(DiskFullError) as info:
        session.sql("DELETE FROM t WHERE id = 2")
    monkeypatch.undo()
    assert "unchanged" in info.value.hint
    visible, hidden = visible_and_hidden(str(root / "_delta_log"))
    assert [n for n in visible if n.endswith(".json")] == [f"{v:020d}.json" for v in (0, 1)]
    assert hidden == []
    assert DeltaLog.for_path(str(root)).snapshot().version == 1
    assert duckdb_rows(str(root), 1, "id") == [(1,), (2,), (3,)]
    assert sorted(session.sql("SELECT id FROM t").df.collect()) == [(1,), (2,), (3,)]
    assert session.sql("DELETE FROM t WHERE id = 2").version == 2


def test_vacuum_removes_stale_temp_files_and_staging_folders(
    session: txsql.Session, tmp_path: Path
) -> None:
    session.sql("CREATE TABLE t (id BIGINT)")
    session.sql("INSERT INTO t VALUES (1)")
    root = _root(tmp_path)
    two_hours_ago = time.time() - 7200
    stale_temp = root / "_delta_log" / f".00000000000000000002.json.{'e' * 32}.tmp"
    young_temp = root / "_delta_log" / f".00000000000000000003.json.{'f' * 32}.tmp"
    stale_stage = root / "_txsql_staging" / ("3" * 32)
    (stale_stage / "_temporary").mkdir(parents=True)
    (stale_stage / "_temporary" / "part-0.parquet").write_bytes(b"PAR1")
    stale_temp.write_bytes(b"{")
    young_temp.write_bytes(b"{")
    os.utime(stale_temp, (two_hours_ago, two_hours_ago))
    # A staging folder is a dead writer's once its newest file is older than the staging
    # window (a day): before that it may be a running statement's.
    two_days_ago = time.time() - 2 * 86400
    for path in (stale_stage / "_temporary" / "part-0.parquet", stale_stage / "_temporary"):
        os.utime(path, (two_days_ago, two_days_ago))
    os.utime(stale_stage, (two_days_ago, two_days_ago))
    session.sql("VACUUM t")
    assert not stale_temp.exists() and not stale_stage.exists()
    assert young_temp.exists(), "a temp file younger than an hour may belong to a live writer"
    assert [r.id for r in session.sql("SELECT id FROM t").df.collect()] == [1]
