"""``%txsql maintenance on|off|status`` and a notebook's DELETE, idle, SELECT."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.magics import cell, ip, magics_of
from txsql.magics.errors import MagicUsageError

__all__ = ["ip"]

pytestmark = pytest.mark.spark


def test_on_by_default_and_switchable(ip: Any) -> None:
    cell(ip, "CREATE TABLE m (id INT)")
    assert "idle maintenance: on" in repr(ip.run_line_magic("txsql", "maintenance status"))
    assert "idle maintenance: off" in repr(ip.run_line_magic("txsql", "maintenance off"))
    assert magics_of(ip).maintenance is False  # sessions the magic starts later start off
    assert "idle maintenance: on" in repr(ip.run_line_magic("txsql", "maintenance on"))
    with pytest.raises(MagicUsageError):
        ip.run_line_magic("txsql", "maintenance sometimes")


def test_delete_idle_select(ip: Any) -> None:
    cell(ip, "CREATE TABLE n (id INT)")
    cell(ip, "INSERT INTO n VALUES (1), (2)")
    cell(ip, "INSERT INTO n VALUES (3)")
    cell(ip, "DELETE FROM n WHERE id = 2")
    session = next(iter(magics_of(ip)._sessions.values()))
    session.maintenance.idle_seconds = 0.2
    # The user reads and thinks (no statement) until maintenance has committed: watched
    # through the log's files, as a statement would stop it.
    log_dir = Path(session.table("n").location) / "_delta_log"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not any(
        "txsqlMaintenance" in f.read_text() for f in log_dir.glob("*.json")
    ):
        time.sleep(0.2)
    selected = ip.run_line_magic("txsql", "SELECT * FROM n ORDER BY id")
    assert "maintenance" not in repr(selected).lower()
    history = repr(ip.run_line_magic("txsql", "history n"))
    assert "REORG (idle maintenance)" in history or "OPTIMIZE (idle maintenance)" in history
    # The SELECT read files without deletion vectors: a plain Parquet scan.
    assert not [f for f in session.table("n").snapshot().files if f.deletion_vector]


def test_idle_time_is_settable(ip: Any) -> None:
    cell(ip, "CREATE TABLE o (id INT)")
    shown = repr(ip.run_line_magic("txsql", "maintenance idle 7.5"))
    assert "after 7.5 s idle" in shown and "log: " in shown
    session = next(iter(magics_of(ip)._sessions.values()))
    assert session.maintenance.idle_seconds == 7.5
    with pytest.raises(MagicUsageError):
        ip.run_line_magic("txsql", "maintenance idle soon")
