"""PREPARE TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED / SHOW TRANSACTIONS through
SQL and the Python API (issue 20).

Oracles: DuckDB's delta extension and deltalake read the tables (no code shared with
txsql); the files under the warehouse are looked at directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.interop.row_ids import lineage
from tests.magics import cell, ip  # noqa: F401  (ip: the magic's fixture)
from txsql import Session
from txsql.errors import (
    PreparedConflictError,
    PreparedTransactionCommittedError,
    PreparedTransactionExistsError,
    PreparedTransactionNotFoundError,
    PreparedTransactionRolledBackError,
    TableNotEnrolledError,
    TransactionError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENROL = "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> Session:
    return Session(spark, warehouse=str(tmp_path / "wh"))


def bank(s: Session) -> None:
    s.sql(f"CREATE TABLE accounts (id INT, balance BIGINT) {ENROL}")
    s.sql("INSERT INTO accounts VALUES (1, 100), (2, 50)")
    s.sql(f"CREATE TABLE ledger (src INT, dst INT, amount BIGINT) {ENROL}")


def path(s: Session, name: str) -> str:
    return f"{s.warehouse}/{name}"


def latest(s: Session, name: str) -> int:
    return s.table(name).version()


TRANSFER = """
BEGIN;
UPDATE accounts SET balance = balance - 30 WHERE id = 1;
UPDATE accounts SET balance = balance + 30 WHERE id = 2;
INSERT INTO ledger VALUES (1, 2, 30);
PREPARE TRANSACTION 't1'
"""


def test_prepare_shows_nothing_until_commit_prepared(s: Session) -> None:
    bank(s)
    before = latest(s, "accounts"), latest(s, "ledger")
    prepared = s.sql(TRANSFER)
    assert prepared.operation == "PREPARE TRANSACTION"
    assert {r["table"]: r["state"] for r in prepared.df.collect()} == {
        "accounts": "prepared",
        "ledger": "prepared",
    }
    # Nothing visible: not to txsql, DuckDB or deltalake.
    assert (latest(s, "accounts"), latest(s, "ledger")) == before
    assert duckdb_rows(path(s, "accounts"), before[0], "id, balance") == [(1, 100), (2, 50)]
    assert s.sql("SELECT count(*) AS n FROM ledger").collect()[0]["n"] == 0
    listed = [r for r in s.sql("SHOW TRANSACTIONS").collect() if r["state"] == "prepared"]
    assert {(r["transaction_id"], r["table"]) for r in listed} == {
        ("t1", "accounts"),
        ("t1", "ledger"),
    }

    committed = s.sql("COMMIT PREPARED 't1'")
    after = latest(s, "accounts"), latest(s, "ledger")
    assert after == (before[0] + 1, before[1] + 1)
    assert {r["table"]: r["version"] for r in committed.df.collect()} == {
        "accounts": after[0],
        "ledger": after[1],
    }
    assert "committed" in committed.message
    assert duckdb_rows(path(s, "accounts"), after[0], "id, balance") == [(1, 70), (2, 80)]
    assert deltalake_rows(path(s, "ledger"), after[1], "src, dst, amount") == [(1, 2, 30)]
    history = s.sql("DESCRIBE HISTORY ledger").df.collect()[0]
    assert history["operationParameters"]["multiTableTransactionId"] == "t1"
    # SHOW TRANSACTIONS lists the group, committed, with both participants.
    shown = [r for r in s.sql("SHOW TRANSACTIONS").collect() if r["transaction_id"] == "t1"]
    assert {(r["state"], r["table"], r["version"]) for r in shown} == {
        ("committed", "accounts", after[0]),
        ("committed", "ledger", after[1]),
    }


def test_commit_prepared_is_idempotent_and_the_opposite_calls_are_refused(s: Session) -> None:
    bank(s)
    s.sql(TRANSFER)
    first = s.commit_prepared("t1")
    again = s.sql("COMMIT PREPARED 't1'")
    assert "already committed" in again.message
    assert {r["table"]: r["version"] for r in again.df.collect()} == {
        r["table"]: r["version"] for r in first.df.collect()
    }
    versions = latest(s, "accounts"), latest(s, "ledger")
    with pytest.raises(PreparedTransactionCommittedError) as refused:
        s.sql("ROLLBACK PREPARED 't1'")
    assert refused.value.versions == {"accounts": versions[0], "ledger": versions[1]}
    assert (latest(s, "accounts"), latest(s, "ledger")) == versions
    assert duckdb_rows(path(s, "accounts"), versions[0], "sum(balance)") == [(150,)]


def test_rollback_prepared_leaves_the_tables_and_no_files(s: Session) -> None:
    bank(s)
    before = latest(s, "accounts"), latest(s, "ledger")
    ledger_files = sorted(p.name for p in Path(path(s, "ledger")).glob("*.parquet"))
    with s.transaction() as tx:
        tx.sql("INSERT INTO ledger VALUES (1, 2, 30)")
        tx.sql("UPDATE accounts SET balance = 0 WHERE id = 1")
        result = tx.prepare("t2")
        assert not tx.is_open
    assert result.operation == "PREPARE TRANSACTION"
    assert sorted(p.name for p in Path(path(s, "ledger")).glob("*.parquet")) != ledger_files
    rolled = s.rollback_prepared("t2")
    assert rolled.message.startswith("transaction 't2' rolled back")
    assert (latest(s, "accounts"), latest(s, "ledger")) == before
    # The files the prepared transaction wrote are gone; the tables read as before.
    assert sorted(p.name for p in Path(path(s, "ledger")).glob("*.parquet")) == ledger_files
    assert duckdb_rows(path(s, "accounts"), before[0], "id, balance") == [(1, 100), (2, 50)]
    with pytest.raises(PreparedTransactionRolledBackError):
        s.sql("COMMIT PREPARED 't2'")
    assert "already rolled back" in s.rollback_prepared("t2").message
    assert [
        r["state"] for r in s.sql("SHOW TRANSACTIONS").collect() if r["transaction_id"] == "t2"
    ] == ["rolled back"]


def test_blind_appends_commit_after_concurrent_appends_and_updates(s: Session) -> None:
    bank(s)
    tx = s.begin()
    tx.sql("INSERT INTO ledger VALUES (1, 2, 5)")
    tx.sql("INSERT INTO accounts VALUES (3, 7)")
    tx.prepare("sink-1")
    # Other writers move both tables on meanwhile: an append, an update, a delete.
    s.sql("INSERT INTO ledger VALUES (9, 9, 9)")
    s.sql("UPDATE accounts SET balance = balance + 1")
    s.sql("DELETE FROM ledger WHERE src = 9")
    s.sql("INSERT INTO accounts VALUES (4, 1)")
    before = latest(s, "accounts"), latest(s, "ledger")
    committed = s.commit_prepared("sink-1")
    after = {r["table"]: r["version"] for r in committed.df.collect()}
    assert after == {"accounts": before[0] + 1, "ledger": before[1] + 1}
    assert duckdb_rows(path(s, "accounts"), after["accounts"], "id, balance") == [
        (1, 101),
        (2, 51),
        (3, 7),
        (4, 1),
    ]
    assert deltalake_rows(path(s, "ledger"), after["ledger"], "src, amount") == [(1, 5)]


def test_row_ids_are_assigned_where_the_prepared_commit_lands(s: Session) -> None:
    """PREPARE stores no row ids; COMMIT PREPARED assigns them above the mark of the
    version it lands on, so a writer that committed in between never shares an id."""
    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ("
        "'delta.enableRowTracking' = 'true', 'txsql.multiTableTransactions' = 'true')"
    )
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'a')")
    _, before = lineage(s.spark, path(s, "t"))
    tx = s.begin()
    tx.sql("UPDATE t SET v = 'u' WHERE id = 2")
    tx.sql("INSERT INTO t VALUES (10, 'p'), (11, 'p')")
    tx.prepare("tracked")
    s.sql("INSERT INTO t VALUES (20, 'w')")  # takes the ids the prepared insert first saw
    _, between = lineage(s.spark, path(s, "t"))
    s.commit_prepared("tracked")
    version, after = lineage(s.spark, path(s, "t"))  # checks: ids distinct, DuckDB agrees
    assert after[2] == (before[2][0], version)  # updated: its id, this version
    assert {k: after[k] for k in (1, 3)} == {k: before[k] for k in (1, 3)}
    assert after[20] == between[20]
    assert min(after[k][0] for k in (10, 11)) > after[20][0]
    assert {after[k][1] for k in (10, 11)} == {version}


def test_a_prepared_update_that_conflicts_is_rolled_back_and_says_so(s: Session) -> None:
    bank(s)
    before_files = sorted(p.name for p in Path(path(s, "ledger")).glob("*.parquet"))
    tx = s.begin()
    tx.sql("UPDATE accounts SET balance = balance - 30 WHERE id = 1")
    tx.sql("INSERT INTO ledger VALUES (1, 2, 30)")
    tx.prepare("t3")
    s.sql("UPDATE accounts SET balance = 0 WHERE id = 1")
    versions = latest(s, "accounts"), latest(s, "ledger")
    with pytest.raises(PreparedConflictError) as conflict:
        s.sql("COMMIT PREPARED 't3'")
    assert "rolled back" in conflict.value.message and "accounts" in conflict.value.message
    assert (latest(s, "accounts"), latest(s, "ledger")) == versions
    assert duckdb_rows(path(s, "accounts"), versions[0], "id, balance") == [(1, 0), (2, 50)]
    assert sorted(p.name for p in Path(path(s, "ledger")).glob("*.parquet")) == before_files
    with pytest.raises(PreparedTransactionRolledBackError):
        s.commit_prepared("t3")


def test_refusals(s: Session) -> None:
    bank(s)
    s.sql("CREATE TABLE plain (x INT)")
    with pytest.raises(TransactionError, match="without BEGIN"):
        s.sql("PREPARE TRANSACTION 'a'")
    with pytest.raises(PreparedTransactionNotFoundError):
        s.sql("COMMIT PREPARED 'nobody'")
    with pytest.raises(PreparedTransactionNotFoundError):
        s.rollback_prepared("nobody")
    with pytest.raises(TableNotEnrolledError, match="plain"):
        s.sql("BEGIN; INSERT INTO plain VALUES (1); PREPARE TRANSACTION 'a'")
    assert s.sql("SELECT count(*) AS n FROM plain").collect()[0]["n"] == 0
    with pytest.raises(TransactionError, match="cannot be a prepared transaction id"):
        s.sql("BEGIN; INSERT INTO ledger VALUES (1, 1, 1); PREPARE TRANSACTION '../x'")
    with pytest.raises(TransactionError, match="wrote nothing"):
        s.sql("BEGIN; SELECT * FROM ledger; PREPARE TRANSACTION 'a'")
    s.sql("BEGIN; INSERT INTO ledger VALUES (1, 1, 1); PREPARE TRANSACTION 'dup'")
    with pytest.raises(PreparedTransactionExistsError):
        s.sql("BEGIN; INSERT INTO ledger VALUES (2, 2, 2); PREPARE TRANSACTION 'dup'")
    tx = s.begin()
    tx.sql("SELECT 1")
    with pytest.raises(TransactionError, match="inside a transaction block"):
        tx.sql("COMMIT PREPARED 'dup'")
    tx.rollback()
    s.commit_prepared("dup")
    assert s.sql("SELECT src FROM ledger").collect()[0]["src"] == 1
    assert s.sql("SELECT count(*) AS n FROM ledger").collect()[0]["n"] == 1


def test_through_the_magic(s: Session, ip: Any) -> None:  # noqa: F811 (the fixture)
    bank(s)  # the magic's warehouse is the same directory
    cell(ip, "BEGIN;\nINSERT INTO ledger VALUES (1, 2, 30)", "--session T1")
    prepared = cell(ip, "PREPARE TRANSACTION 'm1'", "--session T1")
    assert prepared.operation == "PREPARE TRANSACTION"
    assert latest(s, "ledger") == 0
    shown = cell(ip, "SHOW TRANSACTIONS").collect()
    assert [r["state"] for r in shown if r["transaction_id"] == "m1"] == ["prepared"]
    committed = cell(ip, "COMMIT PREPARED 'm1'")
    assert {r["table"]: r["version"] for r in committed.df.collect()} == {"ledger": 1}
    assert duckdb_rows(path(s, "ledger"), 1, "amount") == [(30,)]


def test_a_blind_append_to_a_table_dropped_and_created_again_is_refused(s: Session) -> None:
    bank(s)
    s.sql("BEGIN; INSERT INTO ledger VALUES (1, 2, 30); PREPARE TRANSACTION 'old'")
    s.sql("DROP TABLE ledger")
    s.sql(f"CREATE TABLE ledger (src INT, dst INT, amount BIGINT) {ENROL}")
    s.sql("INSERT INTO ledger VALUES (7, 7, 7)")
    s.sql("INSERT INTO ledger VALUES (8, 8, 8)")
    with pytest.raises(PreparedConflictError, match="rolled back"):
        s.commit_prepared("old")
    assert deltalake_rows(path(s, "ledger"), latest(s, "ledger"), "src") == [(7,), (8,)]
