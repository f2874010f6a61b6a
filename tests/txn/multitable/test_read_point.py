"""One read point across enrolled tables: a group ratified after it is invisible in every
table, even once published (issue 20).

The oracle for what each table holds at each version is the raw log (read here as JSON),
not txsql's replay.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any, cast

import txsql
from tests.txn.multitable import test_transfers as transfers
from tests.txn.multitable.test_group_commit import ENROLLED, make_table, writer
from tests.txn.multitable.transfer_writer import ACCOUNTS, OPENING_BALANCE
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.txn.multitable.read_point import ReadPoints, snapshot_at_read_point
from txsql.txn.transaction import commit_together


def group(logs: list[DeltaLog], name: str) -> None:
    entries = [(t, t.commit_loop("WRITE")) for t in (writer(log, name) for log in logs)]
    commit_together(entries, [log.table_root for log in logs])


class Stopped(Exception):
    pass


def group_stopped_at(logs: list[DeltaLog], module: str, point: str, monkeypatch: Any) -> None:
    """Commit a group whose writer stops at crash point ``point`` of ``module`` (as if it
    died, or were paused, right there)."""

    def stop_there(name: str) -> None:
        if name == point:
            raise Stopped
        crash_point(name)

    monkeypatch.setattr(f"{module}.crash_point", stop_there)
    with contextlib.suppress(Stopped):
        group(logs, "g1")
    monkeypatch.undo()


def test_a_group_after_the_read_point_is_hidden_in_every_table(tmp_path: Path) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    points: ReadPoints = {}
    assert snapshot_at_read_point(points, a).version == 0  # takes the read point
    group([a, b], "g1")  # ratified and published after it
    assert [a.latest_version(), b.latest_version()] == [1, 1]
    assert snapshot_at_read_point(points, b).version == 0  # not half of g1
    assert snapshot_at_read_point(points, a).version == 0
    # A later read point sees the whole group.
    later: ReadPoints = {}
    assert [snapshot_at_read_point(later, t).version for t in (b, a)] == [1, 1]


def test_a_half_published_group_is_hidden_until_it_is_whole(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Published in ``a`` only (its writer is stopped after the first publish): a read
    point taken before the group hides it in ``a`` too."""
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    points: ReadPoints = {}
    assert snapshot_at_read_point(points, b).version == 0

    group_stopped_at([a, b], "txsql.txn.multitable.publish", "mtx_published_1", monkeypatch)
    published = [t.latest_version() for t in (a, b)]
    assert sorted(cast("list[int]", published)) == [0, 1]  # exactly one table published
    assert [snapshot_at_read_point(points, t).version for t in (a, b)] == [0, 0]


def test_a_group_ratified_before_the_read_point_is_seen_whole(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Ratified but not published yet when the first table is looked at: taking the read
    point publishes the group, so the first table must be read again, not at the version
    seen before the point (found by the concurrent test below: half a transfer)."""
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)

    group_stopped_at([a, b], "txsql.txn.multitable.group_commit", "mtx_ratified", monkeypatch)
    assert [a.latest_version(), b.latest_version()] == [0, 0], "ratified, not published"
    points: ReadPoints = {}
    assert [snapshot_at_read_point(points, t).version for t in (a, b)] == [1, 1]


def test_a_transaction_never_reads_half_a_transfer(tmp_path: Path, spark: Any) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    other = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    props = "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
    s.sql(f"CREATE TABLE accounts (id INT, balance INT) {props}")
    s.sql(f"CREATE TABLE ledger (src INT, dst INT, amount INT) {props}")
    s.sql("INSERT INTO accounts VALUES (1, 100), (2, 100)")
    reader = s.begin()
    before = sorted(tuple(r) for r in reader.sql("SELECT * FROM accounts").collect())
    other.sql(
        "BEGIN; UPDATE accounts SET balance = balance - 30 WHERE id = 1;"
        " UPDATE accounts SET balance = balance + 30 WHERE id = 2;"
        " INSERT INTO ledger VALUES (1, 2, 30); COMMIT"
    )
    # The ledger is first read after the transfer committed: still as of the read point.
    ledger = reader.sql("SELECT * FROM ledger").collect()
    again = sorted(tuple(r) for r in reader.sql("SELECT * FROM accounts").collect())
    reader.rollback()
    assert before == again == [(1, 100), (2, 100)]
    assert ledger == []
    # A statement outside the transaction reads both tables at one point: the whole transfer.
    joined = s.sql(
        "SELECT a.id, a.balance, l.amount FROM accounts a LEFT JOIN ledger l ON l.src = a.id"
    ).collect()
    assert sorted(tuple(r) for r in joined) == [(1, 70, 30), (2, 130, None)]
    raw = Path(tmp_path / "wh" / "ledger" / "_delta_log" / f"{1:020d}.json").read_text()
    assert any("add" in json.loads(line) for line in raw.splitlines())  # oracle: raw log


# --- under real concurrency: a reader joins while three processes transfer -----------

READS = 6
PUBLISH_PAUSE_S = "0.2"  # between a group's accounts and ledger publish: a slow store


def test_a_join_never_sees_half_a_transfer_while_processes_transfer(
    tmp_path: Path, spark: Any
) -> None:
    """Three writer processes (tests.txn.multitable.transfer_writer) move money between
    accounts, each transfer one group over accounts and ledger, publishing the two tables
    0.2 s apart. Meanwhile this process runs one txsql SELECT joining both tables, again and
    again.
    Every answer must be one state of the books: the balances sum to the opening total,
    and each account's balance is its opening balance plus what the ledger rows it sees
    moved in and out (no transfer seen in one table and not the other)."""
    warehouse, stop = tmp_path / "wh", tmp_path / "stop"
    created = subprocess.run(
        transfers.writer(warehouse, "create"),
        cwd=transfers.ROOT_DIR,
        env=transfers.child_env(),
        capture_output=True,
        text=True,
    )
    assert created.returncode == 0, created.stderr
    writers = [
        subprocess.Popen(
            transfers.writer(
                warehouse, "until", str(stop), str(child), "WriteSerializable", PUBLISH_PAUSE_S
            ),
            cwd=transfers.ROOT_DIR,
            env=transfers.child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for child in range(3)
    ]
    # The session's own warehouse is elsewhere: no statement-level roll forward of the
    # transfers' coordinator, only what the read point does.
    s = txsql.Session(spark, warehouse=str(tmp_path / "session_wh"))
    query = (
        "SELECT a.id, a.balance, count(l.seq) AS moves, coalesce(sum("
        "CASE WHEN l.dst = a.id THEN l.amount ELSE -l.amount END), 0) AS net "
        f"FROM delta.`{warehouse / 'accounts'}` a "
        f"LEFT JOIN delta.`{warehouse / 'ledger'}` l ON l.src = a.id OR l.dst = a.id "
        "GROUP BY a.id, a.balance"
    )
    seen_transfers = set()
    try:
        for _ in range(READS):
            assert all(w.poll() is None for w in writers), "a writer stopped early"
            rows = [tuple(r) for r in s.sql(query).collect()]
            assert len(rows) == ACCOUNTS, rows
            assert sum(r[1] for r in rows) == ACCOUNTS * OPENING_BALANCE, ("total", rows)
            for account, balance, _, net in rows:
                assert balance == OPENING_BALANCE + net, ("half a transfer", account, rows)
            seen_transfers.add(sum(r[2] for r in rows) // 2)
    finally:
        stop.touch()
        outputs = [w.communicate(timeout=300) for w in writers]
    for w, (_, err) in zip(writers, outputs, strict=True):
        assert w.returncode == 0, err
    committed = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    assert len(seen_transfers) > 1, "the reads overlapped the transfers"
    assert max(seen_transfers) <= len([t for t in committed if not t.get("gave_up")])
