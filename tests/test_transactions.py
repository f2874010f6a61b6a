"""Explicit transactions through SQL (BEGIN/COMMIT/ROLLBACK) and Session.begin()."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
import txsql.txn.transaction
from txsql.errors import (
    ConcurrentAppendError,
    SqlError,
    TransactionAbortedError,
    TransactionError,
    TxSqlError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id INT)")
    session.sql("INSERT INTO t VALUES (1)")
    return session


def _ids(result: txsql.Result) -> list[int]:
    return sorted(r[0] for r in result.df.collect())


def test_begin_commit_writes_one_version_and_reads_own_writes(s: txsql.Session) -> None:
    results = s.run_script(
        "BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3); SELECT id FROM t"
    )
    assert _ids(results[-1]) == [1, 2, 3], "statements read their own staged writes"
    assert s.table("t").version() == 1, "nothing reaches the log before COMMIT"
    assert sorted(s.table("t").to_pandas()["id"]) == [1], "others do not see staged writes"
    committed = s.sql("COMMIT")
    assert committed.version == 2 and committed.read_version == 1
    assert _ids(s.sql("SELECT id FROM t")) == [1, 2, 3]
    history = s.table("t").history().collect()
    assert history[0].operation == "WRITE" and history[0].operationMetrics["numOutputRows"] == "2"


def test_rollback_leaves_no_trace(s: txsql.Session) -> None:
    s.sql("BEGIN; INSERT INTO t VALUES (9)")
    s.sql("ROLLBACK")
    assert s.table("t").version() == 1
    assert _ids(s.sql("SELECT id FROM t")) == [1]
    with pytest.raises(TransactionError):
        s.sql("COMMIT")


def test_one_table_per_transaction_unless_enrolled(s: txsql.Session) -> None:
    # Tables that are not enrolled in multi-table transactions (tests/planner/
    # test_transaction_control.py covers enrolled ones): a second table voids the transaction.
    s.sql("CREATE TABLE other (id INT)")
    with pytest.raises(TransactionAbortedError, match="enrolled"), s.begin() as tx:
        tx.sql("INSERT INTO t VALUES (5)")
        with pytest.raises(TransactionError, match="needs each one enrolled"):
            tx.sql("INSERT INTO other VALUES (5)")
    assert _ids(s.sql("SELECT id FROM t")) == [1], "the failed statement voided the block"


@pytest.mark.parametrize(
    ("isolation", "conflicts"), [("Serializable", True), ("WriteSerializable", False)]
)
def test_reader_writer_vs_concurrent_blind_insert(
    s: txsql.Session, isolation: str, conflicts: bool
) -> None:
    tx = s.begin(isolation)
    assert _ids(tx.sql("SELECT id FROM t")) == [1]
    tx.sql("INSERT INTO t SELECT max(id) + 100 FROM t")
    s.sql("INSERT INTO t VALUES (7)")  # a blind append commits meanwhile (version 2)
    if conflicts:
        with pytest.raises(ConcurrentAppendError) as info:
            tx.commit()
        assert info.value.winning_version == 2
        assert _ids(s.sql("SELECT id FROM t")) == [1, 7]
    else:
        assert tx.commit().version == 3
        assert _ids(s.sql("SELECT id FROM t")) == [1, 7, 101]


# --- Serializable across tables (write skew over two tables) --------------------------


def _two_tables(s: txsql.Session) -> None:
    s.sql("CREATE TABLE a (id INT); INSERT INTO a VALUES (1)")
    s.sql("CREATE TABLE b (id INT); INSERT INTO b VALUES (1)")


def _values(s: txsql.Session, table: str) -> list[int]:
    return sorted(int(r[0]) for r in s.sql(f"SELECT id FROM {table}").df.collect())


@pytest.mark.parametrize("isolation", ["Serializable", "WriteSerializable"])
def test_write_skew_across_two_tables(s: txsql.Session, isolation: str) -> None:
    """T1 writes count(a) + 10 into b, T2 writes count(b) + 10 into a, interleaved.

    Serially the second sees the first's row: (a, b) ends as ([1, 12], [1, 11]) [T1 then
    T2] or ([1, 11], [1, 12]) [T2 then T1]. Both committing gives ([1, 11], [1, 11]).
    Serializable validates the read table at COMMIT, so T2 aborts; WriteSerializable
    validates only the written table, as Delta does, and admits the skew.
    """
    _two_tables(s)
    t1, t2 = s.begin(isolation), s.begin(isolation)
    t1.sql("INSERT INTO b SELECT count(*) + 10 FROM a")
    t2.sql("INSERT INTO a SELECT count(*) + 10 FROM b")
    t1.commit()
    serial = [([1, 12], [1, 11]), ([1, 11], [1, 12])]
    if isolation == "Serializable":
        with pytest.raises(ConcurrentAppendError, match="read by this Serializable") as e:
            t2.commit()
        assert e.value.winning_version == 2 and "read validation of b:" in e.value.rule
        assert "table b, read by this Serializable transaction at version 1" in str(e.value)
        assert not t2.is_open
        assert (_values(s, "a"), _values(s, "b")) == ([1], [1, 11]), "T1 alone: serial"
        assert s.table("a").version() == 1, "the aborted T2 wrote nothing to a"
        t2 = s.begin(isolation)  # T2 re-run after T1 sees T1's row: the serial order
        t2.sql("INSERT INTO a SELECT count(*) + 10 FROM b")
        t2.commit()
        assert (_values(s, "a"), _values(s, "b")) == serial[0]
    else:
        t2.commit()
        final = (_values(s, "a"), _values(s, "b"))
        assert final == ([1, 11], [1, 11]) and final not in serial, "documented write skew"


def test_serializable_read_validation_ignores_unread_changes(s: txsql.Session) -> None:
    """A concurrent change outside what T read (another partition) does not abort T."""
    s.sql("CREATE TABLE p (id INT, part INT) PARTITIONED BY (part)")
    s.sql("INSERT INTO p VALUES (1, 1), (2, 2)")
    tx = s.begin("Serializable")
    tx.sql("INSERT INTO t SELECT id FROM p WHERE part = 1")
    s.sql("DELETE FROM p WHERE part = 2")
    tx.commit()
    assert _ids(s.sql("SELECT id FROM t")) == [1, 1]


def test_serializable_read_only_transaction_over_two_tables(s: txsql.Session) -> None:
    _two_tables(s)
    tx = s.begin("Serializable")
    assert tx.sql("SELECT count(*) FROM a").df.collect()[0][0] == 1
    s.sql("INSERT INTO b VALUES (2)")  # b is pinned at its first read, after this commit
    assert tx.sql("SELECT count(*) FROM b").df.collect()[0][0] == 2
    s.sql("INSERT INTO a VALUES (2)")
    with pytest.raises(ConcurrentAppendError, match="table a, read by"):
        tx.commit()
    lone = s.begin("Serializable")
    lone.sql("SELECT count(*) FROM a").df.collect()
    s.sql("INSERT INTO a VALUES (3)")
    assert lone.commit().operation == "COMMIT", "one snapshot of one table is serializable"


# --- a failed statement fails the transaction ------------------------------------------


def _assert_aborted_then_rollback(
    s: txsql.Session, run: Callable[[str], object], commit: Callable[[], object]
) -> None:
    with pytest.raises(TransactionAbortedError, match="statement 2") as refused:
        run("INSERT INTO t VALUES (4)")
    assert "ROLLBACK to continue" in str(refused.value)
    with pytest.raises(TransactionAbortedError):
        commit()
    assert s.table("t").version() == 1 and sorted(s.table("t").to_pandas()["id"]) == [1]


def test_failed_statement_aborts_sql_transaction(s: txsql.Session) -> None:
    with pytest.raises(SqlError):
        s.sql("BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES ('x' / 0, 1)")
    _assert_aborted_then_rollback(s, s.sql, lambda: s.sql("COMMIT"))
    assert s.sql("ROLLBACK").message == "nothing was written"
    s.sql("BEGIN; INSERT INTO t VALUES (3); COMMIT")
    assert _ids(s.sql("SELECT id FROM t")) == [1, 3], "ROLLBACK cleared the aborted state"


def test_failed_statement_aborts_begin_handle(s: txsql.Session) -> None:
    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (2)")
    with pytest.raises(TxSqlError):
        tx.sql("UPDATE t SET no_such_column = 1")
    assert tx.aborted and "aborted" not in tx.staged_summary().split(" ")[0]
    _assert_aborted_then_rollback(s, tx.sql, tx.commit)
    tx.rollback()
    assert not tx.is_open and _ids(s.sql("SELECT id FROM t")) == [1]


def test_failed_statement_in_transaction_block(s: txsql.Session) -> None:
    with pytest.raises(TxSqlError, match="no_such_table"), s.transaction() as tx:
        tx.sql("INSERT INTO t VALUES (2)")
        tx.sql("INSERT INTO no_such_table VALUES (3)")
    assert _ids(s.sql("SELECT id FROM t")) == [1], "the block's error rolled back"
    with pytest.raises(TransactionAbortedError, match="statement 2"), s.transaction() as tx:
        tx.sql("INSERT INTO t VALUES (2)")
        # swallowed: the block must still not commit the first INSERT
        with contextlib.suppress(SqlError):
            tx.sql("INSERT INTO t VALUES (1 / 'x', 2)")
    assert not tx.is_open and s.table("t").version() == 1
    assert _ids(s.sql("SELECT id FROM t")) == [1]


@pytest.mark.parametrize("level", ["SERIALIZABLE", "WRITESERIALIZABLE"])
def test_write_skew_through_sql_scripts(s: txsql.Session, level: str) -> None:
    """The same skew with BEGIN ISOLATION LEVEL … scripts in two sessions (two notebooks)."""
    _two_tables(s)
    other = txsql.Session(spark=s.spark, warehouse=s.warehouse)
    s.sql(f"BEGIN ISOLATION LEVEL {level}; INSERT INTO b SELECT count(*) + 10 FROM a")
    other.sql(f"BEGIN ISOLATION LEVEL {level}; INSERT INTO a SELECT count(*) + 10 FROM b")
    assert s.sql("COMMIT").version == 2
    if level == "SERIALIZABLE":
        with pytest.raises(ConcurrentAppendError, match="table b, read by this Serializable"):
            other.sql("COMMIT")
        assert (_values(s, "a"), _values(s, "b")) == ([1], [1, 11])
        with pytest.raises(TransactionError, match="COMMIT without BEGIN"):
            other.sql("COMMIT")  # the failed COMMIT ended the transaction
    else:
        other.sql("COMMIT")
        assert (_values(s, "a"), _values(s, "b")) == ([1, 11], [1, 11]), "documented skew"


def test_interrupted_statement_aborts_the_transaction(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement stopped mid-way (Ctrl-C in a notebook) may have staged part of its work."""
    from txsql.planner import registry
    from txsql.planner.sql.statements import Delete

    def interrupted(*_: object) -> txsql.Result:
        raise KeyboardInterrupt

    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (2)")
    monkeypatch.setitem(registry.STATEMENTS, Delete, registry.Entry(interrupted))
    with pytest.raises(KeyboardInterrupt):
        tx.sql("DELETE FROM t WHERE id = 1")
    with pytest.raises(TransactionAbortedError, match=r"statement 2.*KeyboardInterrupt"):
        tx.commit()
    tx.rollback()
    assert s.table("t").version() == 1


@pytest.mark.parametrize("enrolled", [False, True], ids=["plain", "enrolled"])
@pytest.mark.parametrize("isolation", ["Serializable", "WriteSerializable"])
def test_write_skew_of_autocommit_statements(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch, isolation: str, enrolled: bool
) -> None:
    """The same skew without BEGIN: ``INSERT INTO a SELECT count(*) + 10 FROM b`` reads b,
    and another session's ``INSERT INTO b SELECT count(*) + 10 FROM a`` commits between
    that read and its commit. A Serializable statement validates the table it read (at
    the coordinator position it ratifies at when both are enrolled); WriteSerializable
    admits the skew, as Delta does."""
    props = f"'delta.isolationLevel' = '{isolation}'"
    if enrolled:
        props += ", 'txsql.multiTableTransactions' = 'true'"
    for name in ("a", "b"):
        s.sql(f"CREATE TABLE {name} (id INT) TBLPROPERTIES ({props})")
        s.sql(f"INSERT INTO {name} VALUES (1)")
    other = txsql.Session(spark=s.spark, warehouse=s.warehouse)
    real_commit = txsql.txn.transaction.Transaction.commit
    pending = ["b's writer"]

    def commit_after_the_other(txn: Any, *args: Any, **kwargs: Any) -> Any:
        if pending and txn.table_root.endswith("/a"):
            pending.clear()
            other.sql("INSERT INTO b SELECT count(*) + 10 FROM a")
        return real_commit(txn, *args, **kwargs)

    monkeypatch.setattr(txsql.txn.transaction.Transaction, "commit", commit_after_the_other)
    statement = "INSERT INTO a SELECT count(*) + 10 FROM b"
    if isolation == "Serializable":
        with pytest.raises(ConcurrentAppendError, match="table b, read by this Serializable"):
            s.sql(statement)
        assert (_values(s, "a"), _values(s, "b")) == ([1], [1, 11]), "b's writer alone"
        s.sql(statement)  # run again, it sees b's new row: the serial order
        assert (_values(s, "a"), _values(s, "b")) == ([1, 12], [1, 11])
    else:
        s.sql(statement)
        assert (_values(s, "a"), _values(s, "b")) == ([1, 11], [1, 11]), "documented skew"
