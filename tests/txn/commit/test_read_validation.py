"""Serializable validates the tables it read at the position it ratifies at (issue 20).

Two processes run the classic write skew across two enrolled tables, round after round:
T0 reads ``a`` and appends to ``b``, T1 reads ``b`` and appends to ``a``, each a BEGIN ...
COMMIT through the planner's transaction control (``tests.txn.commit.write_skew_worker``). Both
read, stage and pass every check that runs before the commit, then are released to put
their coordinator record at the same moment. At Serializable exactly one commits each
round (the other's read table changed at a position below the one it ratifies at); at
WriteSerializable both commit, which is that level's documented write skew. The oracle
counts the rows with DuckDB and deltalake, which share no code with txsql.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn.multitable.test_group_commit import ENROLLED, make_table, writer
from tests.txn.multitable.test_transfers import ROOT_DIR, child_env, latest_version
from txsql.errors import ConcurrentAppendError
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable.coordinator import Coordinator, GroupRecord
from txsql.txn.transaction import Transaction, commit_together

ROUNDS = 12


def worker(warehouse: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.txn.commit.write_skew_worker", str(warehouse), *args]


def run_rounds(tmp_path: Path, isolation: str) -> tuple[Path, list[dict[str, object]]]:
    warehouse, barriers = tmp_path / "wh", tmp_path / "barriers"
    barriers.mkdir()
    created = subprocess.run(
        worker(warehouse, "create"), cwd=ROOT_DIR, env=child_env(), capture_output=True, text=True
    )
    assert created.returncode == 0, created.stderr
    roles = [
        subprocess.Popen(
            worker(warehouse, "run", str(role), str(ROUNDS), isolation, str(barriers)),
            cwd=ROOT_DIR,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in (0, 1)
    ]
    outcomes = []
    for child in roles:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        outcomes += [json.loads(line) for line in out.splitlines()]
    assert len(outcomes) == 2 * ROUNDS
    return warehouse, outcomes


def rows_of(table: Path) -> list[tuple[object, ...]]:
    version = latest_version(table)
    rows = duckdb_rows(str(table), version, "role, round")
    assert rows == deltalake_rows(str(table), version, "role, round")
    return rows


@pytest.mark.slow
def test_write_skew_across_enrolled_tables_commits_one_of_two(tmp_path: Path) -> None:
    warehouse, outcomes = run_rounds(tmp_path, "SERIALIZABLE")
    for round_ in range(ROUNDS):
        both = [o for o in outcomes if o["round"] == round_]
        committed = [o for o in both if o["committed"]]
        assert len(committed) == 1, ("write skew: both or neither committed", both)
        (lost,) = [o for o in both if not o["committed"]]
        assert "read by this Serializable transaction" in str(lost["error"]), lost
    # What the tables hold is exactly the winners: role 0 wrote b, role 1 wrote a.
    winners = sorted((o["role"], o["round"]) for o in outcomes if o["committed"])
    assert sorted(rows_of(warehouse / "a") + rows_of(warehouse / "b")) == winners


@pytest.mark.slow
def test_write_skew_across_tables_is_allowed_at_write_serializable(tmp_path: Path) -> None:
    warehouse, outcomes = run_rounds(tmp_path, "WRITESERIALIZABLE")
    assert all(o["committed"] for o in outcomes), "WriteSerializable does not validate reads"
    assert len(rows_of(warehouse / "a")) == len(rows_of(warehouse / "b")) == ROUNDS


# --- in one process: a group's read check at the position it ratifies at ---------------


def reading(log: DeltaLog) -> ReadCheck:
    """A Serializable reader of all of ``log``'s table (SELECT * at its newest version)."""
    reader = Transaction(log, isolation=IsolationLevel.SERIALIZABLE)
    snapshot = reader.snapshot()
    assert snapshot is not None
    reader.record_scan(TRUE, snapshot.files)
    return ReadCheck(reader, log.table_root.rpartition("/")[2])


def test_a_group_ratified_first_at_our_position_is_validated_before_we_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A two-table group that read ``c`` loses its first put to a group appending to ``c``
    (put at the same position in between our check and our put): the retry checks the
    winner and fails naming ``c``; ``a`` and ``b`` stay at version 0."""
    a, b, c = (make_table(tmp_path, name, ENROLLED) for name in ("a", "b", "c"))
    check = reading(c)
    ratify = Coordinator.ratify
    raced: list[bool] = []

    def a_winner_first(self: Coordinator, record: GroupRecord) -> bool:
        if not raced:
            raced.append(True)
            other = writer(c, "winner")
            other.commit("WRITE")  # takes record.position, appending to c
        return ratify(self, record)

    monkeypatch.setattr(Coordinator, "ratify", a_winner_first)
    ta, tb = writer(a, "fa"), writer(b, "fb")
    entries = [(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))]
    with pytest.raises(ConcurrentAppendError, match="table c, read by this Serializable"):
        commit_together(entries, ["a", "b"], reads=[check])
    assert check.atomic, "c is enrolled in the group's coordinator"
    assert [a.latest_version(), b.latest_version(), c.latest_version()] == [0, 0, 1]
    assert [ta.state, tb.state] == ["failed", "failed"]


def test_a_read_table_outside_the_coordinator_is_checked_before_and_says_so(
    tmp_path: Path,
) -> None:
    a, plain = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "plain")
    check = reading(plain)
    writer(plain, "meanwhile").commit("WRITE")
    ta = writer(a, "fa")
    with pytest.raises(ConcurrentAppendError) as error:
        ta.commit("WRITE", reads=[check])
    assert not check.atomic and "validated atomically" in error.value.hint
    assert a.latest_version() == 0
