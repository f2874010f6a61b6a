"""Idle maintenance (txsql/maintenance.py): purges DVs and compacts after a DELETE,
marks its commits, respects the opt-out property, is off by default, stays out of the
way of an open transaction."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


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
