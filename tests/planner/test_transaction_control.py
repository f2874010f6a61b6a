"""BEGIN ... COMMIT across tables through SQL and the Python API (issue 20, first slice).

Oracles: DuckDB's delta extension and deltalake read the tables; the raw commit JSON is
read here for the group's tag. Neither shares code with txsql.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql import Session
from txsql.errors import CommitConflictError, TableNotEnrolledError, TransactionAbortedError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENROL = "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
GROUP_TAG = "delta.multiTableTransaction.transactionId"


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> Session:
    return Session(spark, warehouse=str(tmp_path / "wh"))


def bank(s: Session, enrolled: bool = True) -> None:
    props = ENROL if enrolled else ""
    s.sql(f"CREATE TABLE accounts (id INT, balance BIGINT) {props}")
    s.sql("INSERT INTO accounts VALUES (1, 100), (2, 50)")
    s.sql(f"CREATE TABLE ledger (src INT, dst INT, amount BIGINT) {props}")


def table_path(s: Session, name: str) -> str:
    return f"{s.warehouse}/{name}"


def latest(s: Session, name: str) -> int:
    return s.table(name).version()


def commit_info(s: Session, name: str, version: int) -> dict[str, object]:
    text = Path(table_path(s, name), "_delta_log", f"{version:020d}.json").read_text()
    actions = [json.loads(line) for line in text.splitlines() if line.strip()]
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)


TRANSFER = """
BEGIN;
UPDATE accounts SET balance = balance - 30 WHERE id = 1;
UPDATE accounts SET balance = balance + 30 WHERE id = 2;
INSERT INTO ledger VALUES (1, 2, 30);
COMMIT
"""


def test_transfer_commits_both_tables_at_once(s: Session) -> None:
    bank(s)
    before = latest(s, "accounts"), latest(s, "ledger")
    result = s.sql(TRANSFER)
    after = latest(s, "accounts"), latest(s, "ledger")
    assert after == (before[0] + 1, before[1] + 1)
    assert "accounts v" in result.message and "ledger v" in result.message
    listed = {r["table"]: r["version"] for r in result.df.collect()}
    assert listed == {"accounts": after[0], "ledger": after[1]}
    # Outside readers see the transfer in both tables.
    accounts = table_path(s, "accounts")
    ledger = table_path(s, "ledger")
    assert duckdb_rows(accounts, after[0], "id, balance") == [(1, 70), (2, 80)]
    assert duckdb_rows(ledger, after[1], "src, dst, amount") == [(1, 2, 30)]
    assert deltalake_rows(accounts, after[0], "sum(balance)") == [(150,)]
    # One group id on both commits: a tag (Delta's RFC) and in DESCRIBE HISTORY.
    ids = {commit_info(s, n, v)["tags"][GROUP_TAG] for n, v in zip(("accounts", "ledger"), after)}  # type: ignore[index]
    assert len(ids) == 1
    history = s.sql("DESCRIBE HISTORY ledger").df.collect()[0]
    assert history["operationParameters"]["multiTableTransactionId"] == ids.pop()


def test_a_table_not_enrolled_is_refused_before_anything_is_staged(s: Session) -> None:
    bank(s, enrolled=False)
    before = latest(s, "accounts"), latest(s, "ledger")
    s.sql("BEGIN; UPDATE accounts SET balance = balance - 30 WHERE id = 1")
    with pytest.raises(TableNotEnrolledError) as caught:
        s.sql("INSERT INTO ledger VALUES (1, 2, 30)")
    assert "ALTER TABLE accounts SET TBLPROPERTIES" in caught.value.hint
    assert "ALTER TABLE ledger SET TBLPROPERTIES" in caught.value.hint
    with pytest.raises(TransactionAbortedError):
        s.sql("COMMIT")
    s.sql("ROLLBACK")
    assert (latest(s, "accounts"), latest(s, "ledger")) == before
    assert not Path(s.warehouse, "_txsql_coordinator").exists()


def test_alter_enrols_and_then_transactions_span_tables(s: Session) -> None:
    bank(s, enrolled=False)
    for name in ("accounts", "ledger"):
        s.sql(f"ALTER TABLE {name} SET {ENROL}")
    s.sql(TRANSFER)
    assert duckdb_rows(table_path(s, "accounts"), latest(s, "accounts"), "sum(balance)") == [(150,)]


def test_python_api_handles_span_tables(s: Session) -> None:
    bank(s)
    with s.transaction() as tx:
        tx.sql("UPDATE accounts SET balance = balance - 5 WHERE id = 1")
        tx.sql("INSERT INTO ledger VALUES (1, 2, 5)")
    tx2 = s.begin()
    tx2.sql("UPDATE accounts SET balance = balance + 5 WHERE id = 2")
    tx2.sql("INSERT INTO ledger VALUES (1, 2, 5)")
    result = tx2.commit()
    assert {r["table"] for r in result.df.collect()} == {"accounts", "ledger"}
    ledger = table_path(s, "ledger")
    assert duckdb_rows(ledger, latest(s, "ledger"), "count(*)") == [(2,)]
    assert duckdb_rows(table_path(s, "accounts"), latest(s, "accounts"), "sum(balance)") == [(150,)]


def test_a_conflict_names_the_table_and_leaves_every_table_unchanged(s: Session) -> None:
    bank(s)
    first = s.begin()
    first.sql("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
    first.sql("INSERT INTO ledger VALUES (1, 2, 10)")
    s.sql("UPDATE accounts SET balance = 0 WHERE id = 1")  # the winner on the same row
    before = latest(s, "accounts"), latest(s, "ledger")
    with pytest.raises(CommitConflictError, match=r"^accounts: "):
        first.commit()
    assert (latest(s, "accounts"), latest(s, "ledger")) == before
    assert duckdb_rows(table_path(s, "ledger"), before[1], "count(*)") == [(0,)]


def test_single_table_statements_on_enrolled_tables_go_through_the_coordinator(
    s: Session,
) -> None:
    bank(s)
    s.sql("INSERT INTO ledger VALUES (9, 9, 9)")
    records = sorted(Path(s.warehouse, "_txsql_coordinator").glob("*.json"))
    last = json.loads(records[-1].read_text())
    assert [p["version"] for p in last["participants"]] == [latest(s, "ledger")]


def test_other_writers_refuse_an_enrolled_table(s: Session) -> None:
    from deltalake import write_deltalake

    bank(s)
    rows = pa.table({"src": pa.array([1], pa.int32()), "dst": pa.array([2], pa.int32())})
    rows = rows.append_column("amount", pa.array([1], pa.int64()))
    before = latest(s, "ledger")
    with pytest.raises(Exception, match=r"(?i)txsqlMultiTableTransactions|unsupported|feature"):
        write_deltalake(table_path(s, "ledger"), rows, mode="append")
    assert latest(s, "ledger") == before
    # ...while both outside readers still read it.
    assert deltalake_rows(table_path(s, "ledger"), before, "count(*)") == [(0,)]
    assert duckdb_rows(table_path(s, "ledger"), before, "count(*)") == [(0,)]


def test_a_table_that_left_commits_plainly_and_is_refused_in_groups(s: Session) -> None:
    bank(s)
    s.sql("ALTER TABLE ledger SET TBLPROPERTIES ('txsql.multiTableTransactions' = 'false')")
    coordinator = Path(s.warehouse, "_txsql_coordinator")
    records = len(list(coordinator.glob("*.json")))  # the leaving commit was the last one
    s.sql("INSERT INTO ledger VALUES (3, 3, 3)")
    assert len(list(coordinator.glob("*.json"))) == records
    s.sql("BEGIN; UPDATE accounts SET balance = 0 WHERE id = 1")
    with pytest.raises(TableNotEnrolledError, match="ledger"):
        s.sql("INSERT INTO ledger VALUES (1, 2, 30)")
    s.sql("ROLLBACK")
    assert duckdb_rows(table_path(s, "ledger"), latest(s, "ledger"), "count(*)") == [(1,)]
