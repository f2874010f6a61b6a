"""COMMIT PREPARED against other processes: racing a ROLLBACK PREPARED of the same id, and
racing other writers while it re-stages (the two-phase sink property).

Children are ``tests.txn.prepared.prepared_crash_writer`` (prepare / commit / rollback) and
``tests.txn.multitable.multi_crash_writer touch`` (a single-table append to t0 through the
coordinator). DuckDB and deltalake, which share no code with txsql, read the tables.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn.multitable.multi_crash_writer import TABLES

ROOT_DIR = Path(__file__).resolve().parents[3]
MODULES = {
    "multi_crash_writer": "tests.txn.multitable.multi_crash_writer",
    "prepared_crash_writer": "tests.txn.prepared.prepared_crash_writer",
}


def start(warehouse: Path, module: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TXSQL_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", MODULES[module], str(warehouse), *args],
        cwd=ROOT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = child.communicate(timeout=300)
    return child.returncode, out + err


def run(warehouse: Path, module: str, *args: str) -> None:
    code, output = finish(start(warehouse, module, *args))
    assert code == 0, output


def rows_of(warehouse: Path, name: str) -> list[tuple[int, int]]:
    table = warehouse / name
    names = os.listdir(table / "_delta_log")
    version = max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))
    duck = duckdb_rows(str(table), version, "id, amount")
    assert deltalake_rows(str(table), version, "id, amount") == duck
    return duck


def test_commit_and_rollback_of_one_prepared_id_race_to_one_decision(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    run(warehouse, "multi_crash_writer", "create")
    committed = 0
    for round_number in range(4):
        prepared_id = f"race-{round_number}"
        run(warehouse, "prepared_crash_writer", "prepare", prepared_id)
        commit = start(warehouse, "prepared_crash_writer", "commit", prepared_id)
        rollback = start(warehouse, "prepared_crash_writer", "rollback", prepared_id)
        (commit_code, commit_out), (rollback_code, rollback_out) = finish(commit), finish(rollback)
        # Exactly one call decides; the other reports that decision as a typed error.
        assert sorted([commit_code, rollback_code]) == [0, 1], (commit_out, rollback_out)
        if commit_code == 0:
            committed += 1
            assert "PreparedTransactionCommittedError" in rollback_out
        else:
            assert "PreparedTransactionRolledBackError" in commit_out
        for name in TABLES:
            rows = rows_of(warehouse, name)
            assert sum(1 for i, _ in rows if i == 1) == committed, (name, rows)
            assert (
                sum(amount for _, amount in rows)
                == 100
                + committed
                * {
                    "t0": -10,
                    "t1": 4,
                    "t2": 6,
                }[name]
            )


def test_blind_appends_commit_while_other_writers_race(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    run(warehouse, "multi_crash_writer", "create")
    for round_number in range(3):
        prepared_id = f"sink-{round_number}"
        run(warehouse, "prepared_crash_writer", "prepare", prepared_id)
        writers = [start(warehouse, "multi_crash_writer", "touch") for _ in range(2)]
        commit = start(warehouse, "prepared_crash_writer", "commit", prepared_id)
        code, output = finish(commit)
        assert code == 0 and f"transaction '{prepared_id}' committed" in output, output
        for writer in writers:
            assert finish(writer)[0] == 0
    for name in TABLES:
        rows = rows_of(warehouse, name)
        assert sum(1 for i, _ in rows if i == 1) == 3
        assert sum(1 for i, _ in rows if i == 2) == (6 if name == "t0" else 0)
    assert sum(sum(a for _, a in rows_of(warehouse, n)) for n in TABLES) == 300
