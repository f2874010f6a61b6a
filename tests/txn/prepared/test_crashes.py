"""kill -9 around prepared transactions: a child prepares (or decides) and dies; this
process lists, commits and rolls back through SQL.

The child (``tests.txn.prepared.prepared_crash_writer``) prepares one row (id 1) in each of t0, t1,
t2 (amounts summing to zero). DuckDB and deltalake, which share no code with txsql, then
read every table: the row is in all three or in none, and the amounts sum to 300.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn import processes
from tests.txn.multitable.multi_crash_writer import TABLES
from txsql import Session
from txsql.errors import PreparedTransactionNotFoundError, PreparedTransactionRolledBackError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_child(warehouse: Path, *args: str, crash_at: str | None = None) -> int:
    return processes.run_child(
        "tests.txn.prepared.prepared_crash_writer", str(warehouse), *args, crash_at=crash_at
    )


def latest_version(table: Path) -> int:
    names = os.listdir(table / "_delta_log")
    return max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))


def group_rows_seen(warehouse: Path) -> list[bool]:
    """For each table: whether the prepared row (id 1) is visible; both readers agree."""
    seen = []
    total = 0
    for name in TABLES:
        table = warehouse / name
        version = latest_version(table)
        duck = duckdb_rows(str(table), version, "id, amount")
        assert deltalake_rows(str(table), version, "id, amount") == duck
        total += sum(amount for _, amount in duck)
        seen.append(any(i == 1 for i, _ in duck))
    assert total == 300
    return seen


def parquet_files(warehouse: Path) -> int:
    return sum(len(list((warehouse / name).glob("*.parquet"))) for name in TABLES)


@pytest.fixture()
def warehouse(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    assert run_child(wh, "create") == 0
    return wh


def session(spark: SparkSession, warehouse: Path) -> Session:
    return Session(spark, warehouse=str(warehouse))


def prepared_listed(s: Session, prepared_id: str) -> set[str]:
    rows = s.sql("SHOW TRANSACTIONS").collect()
    return {
        r["table"] for r in rows if r["transaction_id"] == prepared_id and r["state"] == "prepared"
    }


@pytest.mark.parametrize("phase", ["prepare_staged_1", "prepare_staged_3"])
def test_killed_before_its_record_nothing_is_prepared(
    spark: SparkSession, warehouse: Path, phase: str
) -> None:
    assert run_child(warehouse, "prepare", "p", crash_at=phase) == -signal.SIGKILL
    s = session(spark, warehouse)
    assert prepared_listed(s, "p") == set()
    with pytest.raises(PreparedTransactionNotFoundError):
        s.sql("COMMIT PREPARED 'p'")
    assert group_rows_seen(warehouse) == [False] * 3


def test_killed_after_prepare_it_is_listed_and_committed_elsewhere(
    spark: SparkSession, warehouse: Path
) -> None:
    assert run_child(warehouse, "prepare", "p", crash_at="prepared_recorded") == -signal.SIGKILL
    s = session(spark, warehouse)
    assert prepared_listed(s, "p") == set(TABLES)
    assert group_rows_seen(warehouse) == [False] * 3
    result = s.sql("COMMIT PREPARED 'p'")
    assert {r["table"]: r["version"] for r in result.df.collect()} == dict.fromkeys(TABLES, 1)
    assert group_rows_seen(warehouse) == [True] * 3
    assert prepared_listed(s, "p") == set()
    assert "already committed" in s.sql("COMMIT PREPARED 'p'").message
    assert group_rows_seen(warehouse) == [True] * 3


def test_killed_after_prepare_it_is_rolled_back_elsewhere(
    spark: SparkSession, warehouse: Path
) -> None:
    files_before = parquet_files(warehouse)
    assert run_child(warehouse, "prepare", "p", crash_at="prepared_recorded") == -signal.SIGKILL
    assert parquet_files(warehouse) == files_before + 3
    s = session(spark, warehouse)
    assert s.sql("ROLLBACK PREPARED 'p'").message.startswith("transaction 'p' rolled back")
    assert parquet_files(warehouse) == files_before  # the prepared files are gone
    assert group_rows_seen(warehouse) == [False] * 3
    assert prepared_listed(s, "p") == set()
    with pytest.raises(PreparedTransactionRolledBackError):
        s.sql("COMMIT PREPARED 'p'")


@pytest.mark.parametrize("phase", ["prepared_ratified", "mtx_published_1", "mtx_published_2"])
def test_a_commit_prepared_killed_midway_is_completed(
    spark: SparkSession, warehouse: Path, phase: str
) -> None:
    assert run_child(warehouse, "prepare", "p") == 0
    assert run_child(warehouse, "commit", "p", crash_at=phase) == -signal.SIGKILL
    s = session(spark, warehouse)
    result = s.sql("COMMIT PREPARED 'p'")
    assert "already committed" in result.message
    assert {r["table"]: r["version"] for r in result.df.collect()} == dict.fromkeys(TABLES, 1)
    assert group_rows_seen(warehouse) == [True] * 3


def test_a_rollback_killed_after_its_decision_is_completed(
    spark: SparkSession, warehouse: Path
) -> None:
    files_before = parquet_files(warehouse)
    assert run_child(warehouse, "prepare", "p") == 0
    killed = run_child(warehouse, "rollback", "p", crash_at="prepared_rollback_decided")
    assert killed == -signal.SIGKILL
    assert parquet_files(warehouse) == files_before + 3  # died before deleting
    s = session(spark, warehouse)
    with pytest.raises(PreparedTransactionRolledBackError):
        s.commit_prepared("p")
    assert "already rolled back" in s.rollback_prepared("p").message
    assert parquet_files(warehouse) == files_before
    assert group_rows_seen(warehouse) == [False] * 3
