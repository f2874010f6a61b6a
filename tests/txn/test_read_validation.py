"""Serializable validates the tables it read at the position it ratifies at (issue 20).

Two processes run the classic write skew across two enrolled tables, round after round:
T0 reads ``a`` and appends to ``b``, T1 reads ``b`` and appends to ``a``, each a BEGIN ...
COMMIT through the planner's transaction control (``tests.txn.write_skew_worker``). Both
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
from tests.txn.test_transfers import ROOT_DIR, child_env, latest_version

ROUNDS = 12


def worker(warehouse: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.txn.write_skew_worker", str(warehouse), *args]


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
