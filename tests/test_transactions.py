"""Explicit transactions through SQL (BEGIN/COMMIT/ROLLBACK) and Session.begin()."""

from __future__ import annotations

from pathlib import Path

import pytest

import txsql
from txsql.errors import ConcurrentAppendError, TransactionError

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: object, tmp_path: Path) -> txsql.Session:
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


def test_one_table_per_transaction(s: txsql.Session) -> None:
    s.sql("CREATE TABLE other (id INT)")
    with s.begin() as tx:
        tx.sql("INSERT INTO t VALUES (5)")
        with pytest.raises(TransactionError, match="cannot also use"):
            tx.sql("INSERT INTO other VALUES (5)")
    assert _ids(s.sql("SELECT id FROM t")) == [1, 5], "the with-block committed the first"


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
