"""The conflict card of a real row-level conflict names the colliding rows and their keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.magics import cell, ip
from txsql.errors import ConcurrentAppendError, ConcurrentDeleteReadError
from txsql.magics.conflict import ConflictCard
from txsql.magics.errors import conflict_lines

__all__ = ["ip"]


def test_card_lists_rows_from_positions_when_no_values_were_read() -> None:
    error = ConcurrentDeleteReadError(
        "rows were deleted",
        winning_version=7,
        rule="rows we matched were deleted by the winner (row level)",
        files=("/w/t/part-0.parquet",),
        rows={"part-0.parquet": (3, 9)},
    )
    table = ConflictCard(error).rows_table()
    assert table is not None
    columns, values = table
    assert [c.name for c in columns] == ["file", "row"]
    assert values == [("part-0.parquet", 3), ("part-0.parquet", 9)]


def test_card_and_text_name_the_winning_multi_table_transaction() -> None:
    error = ConcurrentAppendError("rows were added", winning_version=4, winning_operation="WRITE")
    error.winning_transaction = "7f3c-group"
    assert ConflictCard(error).theirs() == "committed v4 (WRITE) in transaction 7f3c-group first"
    assert conflict_lines(error)[0] == "  winner: v4 (WRITE), transaction 7f3c-group"
    plain = ConcurrentAppendError("rows were added", winning_version=4, winning_operation="WRITE")
    assert ConflictCard(plain).theirs() == "committed v4 (WRITE) first"


@pytest.mark.spark
def test_same_row_update_race_card_names_positions_and_key_values(
    spark: Any, tmp_path: Path
) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id INT, name STRING, k INT) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)")
    tx = s.begin()
    tx.sql("UPDATE t SET k = k + 1 WHERE id = 3")
    winner = s.sql("UPDATE t SET k = 0 WHERE id = 3 OR id = 4").version
    # The winner's new version of row 3 is added data we should have read (Delta's first
    # rule), and the card must say the truth: the same row was written.
    with pytest.raises(ConcurrentAppendError) as info:
        tx.commit()
    error = info.value
    ((path, positions),) = error.rows.items() if error.rows else ((None, ()),)
    assert error.winning_version == winner and len(positions) == 1
    assert path is not None
    # The physical position really holds id 3: read it back independently with Spark.
    table = s.table("t")
    rows = (
        spark.read.parquet(str(Path(table.location) / path))
        .select("id", "_metadata.row_index")
        .collect()
    )
    assert {r.row_index: r.id for r in rows}[positions[0]] == 3
    assert error.row_details == (
        {"file": path, "row": positions[0], "id": 3, "name": "c", "k": 30},
    )
    assert "same-row write" in error.rule
    assert "partition predicate" in error.hint and "no partition predicate" in error.hint
    assert f"rows {path}: {positions[0]}]" in error.message
    card = ConflictCard(error, statement="UPDATE t SET k = k + 1 WHERE id = 3")
    text = repr(card)
    assert "file" in text and "row" in text and "id" in text and "c" in text
    html = card._repr_html_()
    assert "colliding rows:" in html and ">30<" in html.replace(" ", "")
    assert sorted(tuple(r) for r in s.sql("SELECT id, k FROM t").df.collect()) == [
        (1, 10),
        (2, 20),
        (3, 0),
        (4, 0),
    ], "the loser changed nothing"


@pytest.mark.spark
def test_session_cell_shows_the_colliding_row_in_the_card(ip: Any, capsys: Any) -> None:
    cell(
        ip,
        "CREATE TABLE t (id INT, name STRING) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
    )
    cell(ip, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    cell(ip, "BEGIN;\nDELETE FROM t WHERE id = 3", "--session T1")
    cell(ip, "DELETE FROM t WHERE name = 'c'")
    capsys.readouterr()
    outcome = ip.run_cell("%%txsql --session T1\nCOMMIT")
    assert isinstance(outcome.error_in_exec, ConcurrentDeleteReadError)
    out = capsys.readouterr().out
    assert "✘ commit conflict: ConcurrentDeleteReadError" in out
    assert "rows we matched were deleted by the winner (row level)" in out
    header = next(line for line in out.splitlines() if line.startswith("file "))
    assert [c.strip() for c in header.split("|")] == ["file", "row", "id", "name"], out
    body = [
        [c.strip() for c in line.split("|")]
        for line in out.splitlines()
        if line.startswith("part-") and "|" in line
    ]
    assert len(body) == 1 and body[0][2:] == ["3", "c"], out
    assert "no partition predicate avoids" in out.replace("\n", " ")
