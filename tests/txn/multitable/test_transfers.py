"""Three processes move money between accounts, each transfer with its ledger row in one
transaction over two enrolled tables, at WriteSerializable and at Serializable.

The children (``tests.txn.multitable.transfer_writer``) retry conflicts and report every transfer
that committed. Oracles that share no code with txsql then check the outcome: DuckDB and
deltalake read both tables and agree; the total balance is unchanged; the ledger holds
exactly the committed transfers; the ledger's own log (parsed here with ``json``) orders
them as the accounts' versions do; and DuckDB, replaying the ledger serially in that order
on the opening balances, recomputes each transfer's amount (a third of the source's
balance, rounded up, so a stale read or a lost update would change it) and ends at the
final account rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn.multitable.transfer_writer import ACCOUNTS, OPENING_BALANCE

ROOT_DIR = Path(__file__).resolve().parents[3]
CHILDREN = 3
TRANSFERS_PER_CHILD = 5


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TXSQL_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")])
    return env


def writer(warehouse: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.txn.multitable.transfer_writer", str(warehouse), *args]


def latest_version(table: Path) -> int:
    names = os.listdir(table / "_delta_log")
    return max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))


def ledger_order(ledger: Path) -> list[tuple[int, str]]:
    """(version, added file) for every ledger commit after CREATE, from the raw log."""
    order = []
    for version in range(1, latest_version(ledger) + 1):
        lines = (ledger / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
        adds = [json.loads(line)["add"]["path"] for line in lines if '"add"' in line]
        assert len(adds) == 1, (version, adds)
        order.append((version, adds[0]))
    return order


def serial_replay(transfers: list[dict[str, int]]) -> list[tuple[int, int]]:
    """DuckDB applies the transfers one by one to the opening balances, checking that each
    amount is what the transfer would have computed at that point of the serial order."""
    con = duckdb.connect()
    con.execute("CREATE TABLE accounts (id BIGINT, balance BIGINT)")
    con.execute("INSERT INTO accounts SELECT range, ? FROM range(?)", [OPENING_BALANCE, ACCOUNTS])
    for t in transfers:
        row = con.execute(
            "SELECT (balance + 2) // 3 FROM accounts WHERE id = ?", [t["src"]]
        ).fetchone()
        assert row is not None, ("no account", t)
        (expected,) = row
        assert expected == t["amount"], ("not serializable in commit order", t, expected)
        con.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", [expected, t["src"]])
        con.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", [expected, t["dst"]])
    rows = con.execute("SELECT id, balance FROM accounts ORDER BY id").fetchall()
    con.close()
    return [(int(i), int(b)) for i, b in rows]


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["WriteSerializable", "Serializable"])
def test_concurrent_transfers_keep_the_books(tmp_path: Path, isolation: str) -> None:
    warehouse = tmp_path / "wh"
    created = subprocess.run(
        writer(warehouse, "create"), cwd=ROOT_DIR, env=child_env(), capture_output=True, text=True
    )
    assert created.returncode == 0, created.stderr
    children = [
        subprocess.Popen(
            writer(warehouse, "run", str(child), str(TRANSFERS_PER_CHILD), isolation),
            cwd=ROOT_DIR,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for child in range(CHILDREN)
    ]
    reported = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        reported += [json.loads(line) for line in out.splitlines()]
    committed = [t for t in reported if not t.get("gave_up")]
    assert committed, "no transfer committed at all"

    accounts_dir, ledger_dir = warehouse / "accounts", warehouse / "ledger"
    accounts_v, ledger_v = latest_version(accounts_dir), latest_version(ledger_dir)
    assert accounts_v == ledger_v == len(committed), "one version per committed transfer"
    seen = {}
    for name, path, version, columns in (
        ("accounts", accounts_dir, accounts_v, "id, balance"),
        ("ledger", ledger_dir, ledger_v, "child, seq, src, dst, amount"),
    ):
        seen[name] = duckdb_rows(str(path), version, columns)
        assert seen[name] == deltalake_rows(str(path), version, columns), name

    assert sum(b for _, b in seen["accounts"]) == ACCOUNTS * OPENING_BALANCE
    as_rows = sorted((t["child"], t["seq"], t["src"], t["dst"], t["amount"]) for t in committed)
    assert seen["ledger"] == as_rows, "the ledger holds exactly the committed transfers"

    # The group committed each transfer at one version in each table: both orders agree,
    # and the ledger's log has one transfer per version.
    by_version = sorted(committed, key=lambda t: t["ledger_version"])
    assert [t["ledger_version"] for t in by_version] == list(range(1, ledger_v + 1))
    assert [t["accounts_version"] for t in by_version] == list(range(1, accounts_v + 1))
    con = duckdb.connect()
    for version, data_file in ledger_order(ledger_dir):
        row = con.execute(
            f"SELECT child, seq FROM read_parquet('{ledger_dir / data_file}')"
        ).fetchone()
        t = by_version[version - 1]
        assert row == (t["child"], t["seq"]), (version, row, t)
    con.close()

    assert seen["accounts"] == serial_replay(by_version)
