"""OPTIMIZE, VACUUM and DESCRIBE HISTORY display compact tables; diff pairs updates."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

import pytest

from tests.magics import cell, ip
from txsql.magics.diff import Change, pair_changes, parse_diff_args
from txsql.magics.errors import MagicUsageError
from txsql.magics.readable import human_bytes

pytestmark = pytest.mark.spark
__all__ = ["ip"]


def _data_files(table_dir: Path) -> dict[str, int]:
    """Parquet files on disk and their sizes (read from the file system, not the log)."""
    found = glob.glob(str(table_dir / "**" / "*.parquet"), recursive=True)
    return {p: os.path.getsize(p) for p in found if "_delta_log" not in p}


def test_optimize_vacuum_and_history_show_compact_tables(ip: Any, spark: Any) -> None:
    cell(ip, "CREATE TABLE o (id INT, v STRING)")
    for i in range(3):
        cell(ip, f"INSERT INTO o VALUES ({i}, 'v{i}')")
    location = Path(_location(ip, "o"))
    small = _data_files(location)
    assert len(small) == 3

    optimized = cell(ip, "OPTIMIZE o")
    text = repr(optimized)
    assert "files removed" in text and "numBatches" not in text and "zOrderStats" not in text
    columns = [c.name for c in optimized._table()[0]]
    row = dict(zip(columns, optimized._table()[1][0]))
    after = _data_files(location)
    (new_file,) = set(after) - set(small)
    assert row["files removed"] == 3 and row["files added"] == 1
    assert row["bytes removed"] == human_bytes(sum(small.values()))
    assert row["bytes added"] == human_bytes(after[new_file])
    assert row["z-order by"] == "-" and row["DVs purged"] == 0
    assert "numBatches" in repr(cell(ip, "OPTIMIZE o", "--all-columns")), "Delta's shape"

    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dry = cell(ip, "VACUUM o RETAIN 0 HOURS DRY RUN")
        want = f"DRY RUN: 3 file(s) ({human_bytes(sum(small.values()))}) would be deleted"
        assert want in repr(dry) and want in dry._repr_html_()
        assert sorted(r[0] for r in dry.fetched.rows) == sorted(small)
        shown = dry._table()
        assert shown[0][0].name == f"file (under {location})"
        assert sorted(f"{location}/{r[0]}" for r in shown[1]) == sorted(small)
        vacuumed = cell(ip, "VACUUM o RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    columns = [c.name for c in vacuumed._table()[0]]
    row = dict(zip(columns, vacuumed._table()[1][0]))
    assert row["files deleted"] == 3 and row["bytes deleted"] == human_bytes(sum(small.values()))
    assert set(_data_files(location)) == {new_file}

    history = cell(ip, "DESCRIBE HISTORY o")
    columns = [c.name for c in history._table()[0]]
    assert columns == ["version", "timestamp", "operation", "parameters", "metrics"]
    rows = [dict(zip(columns, r)) for r in history._table()[1]]
    assert [r["operation"] for r in rows][:3] == ["VACUUM END", "VACUUM START", "OPTIMIZE"]
    assert all(str(r["timestamp"]).endswith(" UTC") for r in rows)
    assert "numDeletedFiles=3" in rows[0]["metrics"]
    assert "txsqlRowMap" not in repr(history), "txsql's own bookkeeping is not shown"
    assert "isBlindAppend" not in repr(history) and "<svg" in history._repr_html_()
    full = cell(ip, "DESCRIBE HISTORY o", "--all-columns")
    assert len(full._table()[0]) == 15 and "isBlindAppend" in repr(full)


def _location(ip: Any, table: str) -> str:
    from txsql.magics.magic import TxSqlMagics

    magics = next(m for m in reversed(ip.configurables) if isinstance(m, TxSqlMagics))
    session = next(iter(magics._sessions.values()))
    return str(session.table(table).location)


def test_diff_pairs_an_update_into_one_row_old_to_new(ip: Any) -> None:
    cell(ip, "CREATE TABLE p (id INT, name STRING, qty INT)")
    cell(ip, "INSERT INTO p VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")  # v1
    cell(ip, "UPDATE p SET qty = qty * 10 WHERE id = 2")  # v2
    cell(ip, "DELETE FROM p WHERE id = 3; INSERT INTO p VALUES (4, 'd', 4)")  # v3, v4

    diff = ip.run_line_magic("txsql", "diff p 1 4")
    assert diff.updated == [((2, "b", 2), (2, "b", 20))]
    assert (diff.added, diff.removed) == ([(4, "d", 4)], [(3, "c", 3)])
    text = repr(diff)
    assert "p: v1 → v4 · 1 added, 1 updated, 1 removed" in text and "2 → 20" in text
    assert "2 → 20" in diff._repr_html_()

    # An UPDATE of the key itself: by the default key (the first column) it is a removal
    # and an addition; keyed by another column it is one updated row.
    cell(ip, "UPDATE p SET id = 5 WHERE name = 'a'")  # v5
    by_id = ip.run_line_magic("txsql", "diff p 4 5")
    assert (by_id.removed, by_id.added, by_id.updated) == ([(1, "a", 1)], [(5, "a", 1)], [])
    by_name = ip.run_line_magic("txsql", "diff p 4 5 --key name")
    assert by_name.updated == [((1, "a", 1), (5, "a", 1))] and "1 → 5" in repr(by_name)
    with pytest.raises(MagicUsageError, match="no column 'nope' for --key"):
        ip.run_line_magic("txsql", "diff p 4 5 --key nope")


def test_pairing_rule_leaves_shared_keys_and_cut_groups_unpaired() -> None:
    rows = [
        ("-", (1, "a")),
        ("+", (1, "b")),
        ("+", (1, "c")),  # two added rows with key 1: no pairing
        ("-", (2, "x")),
        ("+", (2, "y")),
        ("-", (3, "z")),  # the fetch was cut here: key 3's partner may be missing
    ]
    changes = pair_changes(rows, [0], truncated=True)
    assert [c.sign for c in changes] == ["-", "+", "+", "~"]
    assert changes[-1] == Change("~", (2, "x"), (2, "y"))
    assert parse_diff_args(["t", "--key=a,b", "3"]).key == ("a", "b")
    with pytest.raises(MagicUsageError, match="--key needs column names"):
        parse_diff_args(["t", "--key"])
