"""Idle maintenance (txsql/maintenance.py): purges DVs and compacts after a DELETE,
marks its commits, respects the opt-out property, is off by default, stays out of the
way of an open transaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.log.actions import AddFile, CommitInfo
from txsql.planner.context import RunContext
from txsql.planner.dml.hooks import DML_HOOKS
from txsql.planner.operations.maintenance import (
    checkpoint_if_due,
    compact_small_files,
    purge_deletion_vectors,
)
from txsql.planner.operations.optimize import deleted_fraction
from txsql.planner.sql.refs import TableRef
from txsql.txn.rowlevel.state import num_records

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROOT_DIR = Path(__file__).resolve().parents[1]


def _wait_for(predicate, seconds: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _ops(s: txsql.Session) -> list[str]:
    # Read the log files directly: a statement would make the session busy again.
    ops = []
    for f in sorted((Path(s.warehouse) / "t" / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                ops.append(action["commitInfo"]["operation"])
    return ops


def _setup(s: txsql.Session, props: str = "") -> None:
    s.sql(f"CREATE TABLE t (id INT, v INT) {props}")
    for i in range(3):
        s.sql(f"INSERT INTO t VALUES ({i * 10}, 1), ({i * 10 + 1}, 2)")
    s.sql("DELETE FROM t WHERE id = 1")


def test_off_by_default(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"))
    assert not s.maintenance.running
    s.close()


def test_purges_and_compacts_after_delete(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance=True, maintenance_idle_seconds=0.2)
    try:
        _setup(s)
        assert _wait_for(lambda: {"REORG", "OPTIMIZE"} <= set(_ops(s)))
        # Its pass over, maintenance waits for the next statement without working, so a
        # statement that starts now has nothing to stop.
        assert _wait_for(lambda: not s.maintenance.working)
        time.sleep(1.0)
        assert not s.maintenance.working
    finally:
        s.close()
    rows = sorted(r["id"] for r in s.sql("SELECT id FROM t").df.collect())
    assert rows == [0, 10, 11, 20, 21]
    history = s.sql("DESCRIBE HISTORY t").df.collect()
    marked = [r for r in history if r["operation"] in ("REORG", "OPTIMIZE")]
    assert marked and all(r["operationParameters"]["txsqlMaintenance"] == "true" for r in marked)
    detail = s.sql("DESCRIBE DETAIL t").df.collect()[0]
    assert detail["numFiles"] == 1


def test_opt_out_property(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance=True, maintenance_idle_seconds=0.2)
    try:
        _setup(s, "TBLPROPERTIES ('txsql.maintenance' = 'false')")
        time.sleep(2.0)
    finally:
        s.close()
    assert not {"REORG", "OPTIMIZE"} & set(_ops(s))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("txsql.maintenance", "off"),
        ("txsql.maintenance.purgeThreshold", "2"),
        ("txsql.maintenence", "false"),
    ],
)
def test_bad_settings_are_refused_at_alter(
    spark: SparkSession, tmp_path: Path, key: str, value: str
) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT)")
    with pytest.raises(txsql.errors.InvalidTablePropertyError, match=key.split(".")[-1]) as info:
        s.sql(f"ALTER TABLE t SET TBLPROPERTIES ('{key}' = '{value}')")
    assert info.value.hint
    assert s.table("t").version() == 0
    assert not any(k.startswith("txsql.") for k in s.table("t").snapshot().configuration)


def test_nothing_during_open_transaction(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance=True, maintenance_idle_seconds=0.2)
    try:
        _setup(s)
        s.sql("BEGIN")
        time.sleep(2.0)
        s.sql("ROLLBACK")
        s.maintenance.stop()
        assert not {"REORG", "OPTIMIZE"} & set(_ops(s))
    finally:
        s.close()


def _step_context(s: txsql.Session) -> RunContext:
    ctx = RunContext(s.spark, s.catalog, DML_HOOKS, 2)
    ctx.begin_statement()
    return ctx


def _dv_fractions(s: txsql.Session) -> dict[int, float]:
    """Rows per live file -> the fraction its DV deletes."""
    files = s.table("t").snapshot().files
    return {num_records(f.stats) or 0: deleted_fraction(f) for f in files}


def test_purge_threshold_leaves_files_below_it(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id INT, v INT) TBLPROPERTIES ('txsql.maintenance.purgeThreshold' = '0.3')"
    )
    s.sql("INSERT INTO t VALUES " + ", ".join(f"({i}, 0)" for i in range(10)))  # one file
    s.sql("INSERT INTO t VALUES (100, 0), (101, 0)")  # one file of 2 rows
    s.sql("DELETE FROM t WHERE id IN (0, 100)")  # 10 % and 50 % deleted
    assert _dv_fractions(s) == {10: 0.1, 2: 0.5}
    ctx = _step_context(s)
    try:
        purge_deletion_vectors(ctx, TableRef(name="t"))
    finally:
        ctx.end_statement()
    assert _dv_fractions(s) == {10: 0.1, 1: 0.0}  # the 50 % file rewritten, the other kept
    version = s.table("t").version()
    assert duckdb_rows(s.table("t").location, version, "id") == [(i,) for i in range(1, 10)] + [
        (101,)
    ]


def test_steps_use_one_task_slot(spark: SparkSession, tmp_path: Path) -> None:
    """Every Spark stage of a purge and a compaction runs one task, bin after bin, so the
    user's next statement finds the other slots free; the row map still lets DML race it."""
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v INT) TBLPROPERTIES ('delta.targetFileSize' = '8kb')")
    for i in range(3):
        s.sql(f"INSERT INTO t SELECT id + {i * 1000}, 0 FROM range(0, 1000, 1, 4)")
    s.sql("DELETE FROM t WHERE id % 10 = 3")
    group = f"one-slot-{tmp_path.name}"
    spark.sparkContext.setJobGroup(group, "maintenance steps")
    ctx = _step_context(s)
    try:
        purge_deletion_vectors(ctx, TableRef(name="t"))
        compact_small_files(ctx, TableRef(name="t"))
    finally:
        ctx.end_statement()
        spark.sparkContext.setJobGroup("", "")
    tracker = spark.sparkContext.statusTracker()
    stages = []
    for job in tracker.getJobIdsForGroup(group):
        job_info = tracker.getJobInfo(job)
        stages += [tracker.getStageInfo(stage) for stage in (job_info.stageIds if job_info else [])]
    wide = [(i.name, i.numTasks) for i in stages if i is not None and i.numTasks != 1]
    assert stages and not wide
    log = s.table("t").log
    infos = [
        (v, a)
        for v in range(s.table("t").version() + 1)
        for a in log.read_commit(v)
        if isinstance(a, CommitInfo) and a.operation == "REORG"
    ]
    assert infos, "the purge committed"
    version, info = infos[0]
    assert "txsqlRowMap" in (info.operation_parameters or {})
    # Several bins, each its own one-task job, all in one commit with one row map.
    assert sum(1 for a in log.read_commit(version) if isinstance(a, AddFile)) > 1
    expected = [(i,) for i in range(3000) if i % 10 != 3]
    assert sorted(duckdb_rows(s.table("t").location, s.table("t").version(), "id")) == expected
    assert len(s.table("t").snapshot().files) < 12


def test_clustering_step_records_a_row_order_a_racing_dml_uses(
    spark: SparkSession, tmp_path: Path
) -> None:
    """On a clustered table the compaction step sorts bin after bin (one task each) and
    still records one row order, so a DML that began before it commits after it."""
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v INT) CLUSTER BY (v)")
    for i in range(3):
        s.sql(f"INSERT INTO t SELECT id + {i * 100}, CAST(id % 7 AS INT) FROM range(100)")
    dml = s.begin()
    dml.sql("UPDATE t SET v = v + 100 WHERE id % 10 = 3")
    ctx = _step_context(s)
    try:
        compact_small_files(ctx, TableRef(name="t"))
    finally:
        ctx.end_statement()
    info = next(
        a for a in s.table("t").log.read_commit(s.table("t").version()) if isinstance(a, CommitInfo)
    )
    assert json.loads((info.operation_parameters or {})["txsqlRowMap"])["v"] == 2
    dml.commit()
    expected = sorted((i, i % 100 % 7 + (100 if i % 10 == 3 else 0)) for i in range(300))
    t = s.table("t")
    assert sorted(tuple(r) for r in s.sql("SELECT id, v FROM t").df.collect()) == expected
    assert duckdb_rows(t.location, t.version(), "id, v") == expected


def test_checkpoint_step_writes_a_missing_one(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT, v INT) TBLPROPERTIES ('delta.checkpointInterval' = '1000')")
    for i in range(4):
        s.sql(f"INSERT INTO t VALUES ({i}, 0)")
    ctx = _step_context(s)
    try:
        assert "no checkpoint due" in str(checkpoint_if_due(ctx, TableRef(name="t")))
        s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.checkpointInterval' = '4')")  # v5
        log_dir = Path(s.table("t").location) / "_delta_log"
        assert not list(log_dir.glob("*.checkpoint*.parquet"))
        assert "version 5" in str(checkpoint_if_due(ctx, TableRef(name="t")))
    finally:
        ctx.end_statement()
    assert (log_dir / f"{5:020d}.checkpoint.parquet").exists()
    assert deltalake_rows(s.table("t").location, 5, "id") == [(i,) for i in range(4)]


def test_tables_of_an_undecided_prepare_are_skipped(spark: SparkSession, tmp_path: Path) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance_idle_seconds=0.2)
    try:
        _setup(s, "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')")  # a DV to purge
        s.sql("BEGIN; DELETE FROM t WHERE id = 20; PREPARE TRANSACTION 'p'")
        s.maintenance.start()
        time.sleep(2.0)
        assert not {"REORG", "OPTIMIZE"} & set(_ops(s))
        s.sql("COMMIT PREPARED 'p'")  # nothing maintenance did makes it conflict
        assert _wait_for(lambda: {"REORG", "OPTIMIZE"} & set(_ops(s)))  # decided: maintained
    finally:
        s.close()
    rows = sorted(r["id"] for r in s.sql("SELECT id FROM t").df.collect())
    assert rows == [0, 10, 11, 21]


def _table_files(location: str) -> set[str]:
    return {
        str(p.relative_to(location))
        for p in Path(location).rglob("*.parquet")
        if "_delta_log" not in p.parts
    }


def _logged_files(location: str) -> set[str]:
    names = set()
    for f in (Path(location) / "_delta_log").glob("*.json"):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            for kind in ("add", "remove"):
                if kind in action:
                    names.add(action[kind]["path"])
    return names


def test_a_statement_cancels_a_step_and_nothing_is_left(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance=True, maintenance_idle_seconds=0.1)
    try:
        s.maintenance.stop()
        s.sql("CREATE TABLE t AS SELECT id, id % 7 AS v FROM range(3000000)")
        s.sql("DELETE FROM t WHERE id % 10 = 3")
        location = s.table("t").location
        before = s.table("t").version()
        s.maintenance.start()
        assert _wait_for(lambda: s.maintenance.working, 30)
        time.sleep(0.3)  # inside the REORG's Spark job
        count = s.sql("SELECT count(*) AS n FROM t").df.collect()[0]["n"]  # stops maintenance
        s.maintenance.stop()
        assert count == 2_700_000
        assert s.table("t").version() == before  # the cancelled step committed nothing
        assert _table_files(location) <= _logged_files(location)  # and left no file
    finally:
        s.close()
    assert duckdb_rows(location, before, "count(*)") == [(2_700_000,)]


def test_kill_9_during_maintenance_leaves_a_readable_table(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT_DIR), os.environ.get("PYTHONPATH", "")])
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.maintenance_writer", str(warehouse)],
        cwd=ROOT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "deleted"
        location = str(warehouse / "t")
        logged = _table_files(location)
        # Kill once maintenance is writing its first new file (mid-step).
        assert _wait_for(lambda: bool(_table_files(location) - logged), 120)
    finally:
        child.kill()  # SIGKILL
        child.wait()
    version = max(int(p.name[:20]) for p in (warehouse / "t" / "_delta_log").glob("*.json"))
    expected = [(1_800_000,)]
    assert duckdb_rows(location, version, "count(*)") == expected
    assert len(deltalake_rows(location, version, "id")) == expected[0][0]
