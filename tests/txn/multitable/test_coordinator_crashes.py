"""kill -9 a three-table group at every coordinator phase: all participants or none.

A child (``tests.txn.multitable.multi_crash_writer``) commits one group over t0, t1, t2 and dies by
SIGKILL at a phase, with its commits inline in the coordinator record (as small commits
are) or written as staged commit files first (as large ones are). Then another process
makes one txsql commit to t0 (which rolls the coordinator forward). DuckDB and deltalake,
which share no code with txsql, must then read every table, and the group's row (id 1) is
in every table or in none. Before recovery they see what the README promises: published
tables only (the publish window).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn import processes
from tests.txn.multitable.multi_crash_writer import TABLES

STAGED = ["mtx_staged_1", "mtx_staged_2", "mtx_staged_3"]
# Phases after which the group is ratified, with the tables already published at the kill.
RATIFIED = {"mtx_ratified": 0, "mtx_published_1": 1, "mtx_published_2": 2, "mtx_cleanup": 3}


FORMS = ["inline", "staged"]


def run_child(warehouse: Path, mode: str, crash_at: str | None = None, form: str = "") -> int:
    return processes.run_child(
        "tests.txn.multitable.multi_crash_writer", str(warehouse), mode, form, crash_at=crash_at
    )


def latest_version(table: Path) -> int:
    names = [
        n for n in os.listdir(table / "_delta_log") if n.endswith(".json") and n[:20].isdigit()
    ]
    return max(int(n[:20]) for n in names if len(n) == 25)


def ids_seen(table: Path) -> dict[str, list[tuple[int, int]]]:
    """The (id, amount) rows each outside reader sees at the table's newest commit."""
    version = latest_version(table)
    return {
        "duckdb": duckdb_rows(str(table), version, "id, amount"),
        "deltalake": deltalake_rows(str(table), version, "id, amount"),
    }


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("phase", [*STAGED, *RATIFIED])
def test_a_killed_group_is_all_or_nothing(tmp_path: Path, phase: str, form: str) -> None:
    warehouse = tmp_path / "wh"
    assert run_child(warehouse, "create") == 0
    assert run_child(warehouse, "transfer", crash_at=phase, form=form) == -signal.SIGKILL
    # Before any txsql access: readers see exactly the published tables.
    published = RATIFIED.get(phase, 0)
    for number, name in enumerate(TABLES):
        rows = ids_seen(warehouse / name)
        has_group_row = [any(i == 1 for i, _ in r) for r in rows.values()]
        assert has_group_row == [number < published] * 2, (name, rows)
    # A txsql access in another process completes (or ignores) the group.
    assert run_child(warehouse, "touch") == 0
    advanced = phase in RATIFIED
    total = 0
    for name in TABLES:
        rows = ids_seen(warehouse / name)
        assert rows["duckdb"] == rows["deltalake"]
        assert any(i == 1 for i, _ in rows["duckdb"]) == advanced, (name, rows)
        total += sum(a for _, a in rows["duckdb"])
    assert total == 300  # the group's amounts sum to zero: whole or absent
    # Versions: t1 and t2 moved exactly when the group landed.
    assert [latest_version(warehouse / n) for n in TABLES[1:]] == [1 if advanced else 0] * 2


def test_a_group_that_is_not_killed_lands_everywhere(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    assert run_child(warehouse, "create") == 0
    assert run_child(warehouse, "transfer") == 0
    for name in TABLES:
        assert [i for i, _ in ids_seen(warehouse / name)["duckdb"]] == [0, 1]
        staged = warehouse / name / "_delta_log" / "_staged_commits"
        assert not staged.exists() or not os.listdir(staged)


def test_concurrent_groups_all_land_whole(tmp_path: Path) -> None:
    """Three processes ratify five groups each over the same three tables: whoever loses
    a position to another re-checks, re-stages and retries; blind appends never conflict, so all 15
    groups land in every table and the amounts still sum to 300."""
    warehouse = tmp_path / "wh"
    assert run_child(warehouse, "create") == 0
    env = processes.child_env()
    command = [
        sys.executable,
        "-m",
        "tests.txn.multitable.multi_crash_writer",
        str(warehouse),
        "transfers",
    ]
    children = [
        subprocess.Popen(
            command, cwd=processes.ROOT_DIR, env=env, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    for child in children:
        _, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
    total = 0
    for name in TABLES:
        rows = ids_seen(warehouse / name)
        assert rows["duckdb"] == rows["deltalake"]
        assert sum(1 for i, _ in rows["duckdb"] if i == 1) == 15, name
        assert latest_version(warehouse / name) == 15
        total += sum(a for _, a in rows["duckdb"])
    assert total == 300
    records = [n for n in os.listdir(warehouse / "_txsql_coordinator") if n.endswith(".json")]
    assert len(records) == 15
