"""The write-conflict matrix, every cell a real race on txsql (issue 23, part 1).

Each cell: our statement begins and runs, theirs runs and commits, ours commits
(:mod:`txsql.teaching.races`). The expected outcomes below are derived from txsql's rules
(ARCHITECTURE.md, "Conflict checks"), in the checker's order:

1. A blind INSERT reads nothing and removes nothing: it never conflicts.
2. A DML (UPDATE/DELETE/MERGE on one key) conflicts only when the same row is involved.
   Step 5 comes first: if the winner wrote a row our predicate matches (their UPDATE or
   MERGE rewrote our row), ``A`` (ConcurrentAppend); if the winner only deleted our row
   (DELETE, a deletion-vector bit), step 6: ``DR`` (ConcurrentDeleteRead). Different rows
   of one file, or one partition, do not conflict: the DV bitmaps are disjoint and the
   winner's new rows miss our predicate.
3. A DML that loses to OPTIMIZE, REORG or ZORDER BY is translated through the compaction's
   row map (for ZORDER BY, the order it sorted the rows in) and commits; a compaction that
   loses to a DML carries the DML's deleted rows onto its outputs and commits.
4. Two compactions of the same file: the later one read a file the winner removed, ``DR``
   (no map composes two rewrites).
5. Partitioned, different partitions: a DML in p=2 does not touch file A (p=1), which is
   all that OPTIMIZE and REORG rewrite there (file B, alone and without a DV, is left
   alone), so compactions and DMLs meet only under ZORDER BY, which rewrites every file
   and commits beside them by rule 3.

Isolation level: the two levels differ only in whether a winner's blind append is checked
against our reads (WriteSerializable skips it; compactions commit at SnapshotIsolation on
both). So Serializable is asserted where it can change anything: a DML (the only
statements here that read under a level) racing an INSERT, in every setting; every other
cell's race is the same race at both levels. Under Serializable txsql still commits a
DML racing an INSERT: the inserted row (id 200) does not match the DML's predicate, so the
DML's result is the same in both serial orders. Databricks documents "can conflict" there
(the highlighted cells); txsql's answer is still serializable, as the serial check shows.

Where txsql differs from Databricks' documented table:
- DML vs DML, different rows of one partition: txsql commits (Databricks partitions have
  no row-level concurrency). Serializable: the rows are disjoint, both orders agree.
- DML vs INSERT under Serializable: txsql commits (above).
- DML vs ZORDER BY, either side first: txsql commits both (rule 3; Databricks documents
  "can conflict"). Compaction changes no rows, so both serial orders are the DML's result.
- OPTIMIZE/REORG vs OPTIMIZE/REORG: txsql aborts the later one (Databricks documents
  "cannot conflict"): stricter, so trivially serializable.

Cost: the four settings share two base tables, copied per race; races whose texts
coincide across settings (e.g. OPTIMIZE vs INSERT in both one-file settings) run once, and
theirs' statement runs once per layout and text, its commit copied into each of its races
(21 statements instead of 156; ours still runs and commits in every race).
"""

from __future__ import annotations

from typing import Any

import pytest

from txsql.errors import ScenarioError, TxSqlError
from txsql.teaching import SETTINGS, STATEMENTS, ConflictMatrix, Setting, conflict_matrix
from txsql.teaching.matrix import databricks, delta_oss
from txsql.teaching.races import THEIR_NEW_ID, RaceTrack, Statement

COLUMNS = ("INSERT", "UPDATE", "DELETE", "MERGE", "OPTIMIZE", "ZORDER", "REORG")

SAME_ROW = """
INSERT   ✔ ✔  ✔  ✔  ✔  ✔  ✔
UPDATE   ✔ A  DR A  ✔  ✔  ✔
DELETE   ✔ A  DR A  ✔  ✔  ✔
MERGE    ✔ A  DR A  ✔  ✔  ✔
OPTIMIZE ✔ ✔  ✔  ✔  DR DR DR
ZORDER   ✔ ✔  ✔  ✔  DR DR DR
REORG    ✔ ✔  ✔  ✔  DR DR DR
"""
# Different rows of file A: rule 2, DMLs no longer meet; the rest as above.
DIFFERENT_ROWS = """
INSERT   ✔ ✔  ✔  ✔  ✔  ✔  ✔
UPDATE   ✔ ✔  ✔  ✔  ✔  ✔  ✔
DELETE   ✔ ✔  ✔  ✔  ✔  ✔  ✔
MERGE    ✔ ✔  ✔  ✔  ✔  ✔  ✔
OPTIMIZE ✔ ✔  ✔  ✔  DR DR DR
ZORDER   ✔ ✔  ✔  ✔  DR DR DR
REORG    ✔ ✔  ✔  ✔  DR DR DR
"""
# Rule 5: theirs works in p=2 (file B); ours (key 1) in p=1 (file A).
DIFFERENT_PARTITIONS = """
INSERT   ✔ ✔  ✔  ✔  ✔  ✔  ✔
UPDATE   ✔ ✔  ✔  ✔  ✔  ✔  ✔
DELETE   ✔ ✔  ✔  ✔  ✔  ✔  ✔
MERGE    ✔ ✔  ✔  ✔  ✔  ✔  ✔
OPTIMIZE ✔ ✔  ✔  ✔  DR DR DR
ZORDER   ✔ ✔  ✔  ✔  DR DR DR
REORG    ✔ ✔  ✔  ✔  DR DR DR
"""
EXPECTED = {
    "one file, same row": SAME_ROW,
    "one file, different rows": DIFFERENT_ROWS,
    # One partition is one file here: row-level checks make it the one-file case.
    "partitioned, same partition": DIFFERENT_ROWS,
    "partitioned, different partitions": DIFFERENT_PARTITIONS,
}
DML = ("UPDATE", "DELETE", "MERGE")
SHORT = {"✔": "✔", "A": "ConcurrentAppend", "DR": "ConcurrentDeleteRead"}


def parse(table: str) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for line in table.strip().splitlines():
        ours, *cells = line.split()
        assert len(cells) == len(COLUMNS), line
        out |= {(ours, theirs): SHORT[c] for theirs, c in zip(COLUMNS, cells)}
    return out


@pytest.fixture(scope="module")
def raced(spark: Any) -> tuple[ConflictMatrix, RaceTrack]:
    track = RaceTrack(spark)
    try:
        write_serializable = conflict_matrix(spark, levels=("WriteSerializable",), track=track)
        serializable = conflict_matrix(
            spark, levels=("Serializable",), rows=DML, columns=["INSERT"], track=track
        )
    finally:
        track.close()
    return ConflictMatrix(write_serializable.cells + serializable.cells), track


@pytest.fixture(scope="module")
def matrix(raced: tuple[ConflictMatrix, RaceTrack]) -> ConflictMatrix:
    return raced[0]


@pytest.mark.spark
def test_every_cell_matches_the_expected_outcome(matrix: ConflictMatrix) -> None:
    assert list(STATEMENTS) == list(COLUMNS)
    wrong = []
    for setting in matrix.settings():
        expected = parse(EXPECTED[setting.name])
        for (ours, theirs), got in matrix.outcomes(setting).items():
            # Serializable: the INSERT column; a DML still commits (see the docstring).
            if got != expected[(ours, theirs)]:
                wrong.append((setting.name, setting.level, ours, theirs, got))
    assert wrong == []
    assert len(matrix.cells) == len(SETTINGS) * (len(COLUMNS) ** 2 + len(DML))


@pytest.mark.spark
def test_every_cell_ends_in_a_serial_order(matrix: ConflictMatrix) -> None:
    """DuckDB replays both serial orders on the base rows; the race's rows equal one."""
    assert [(c.setting.name, c.ours, c.theirs, c.rows) for c in matrix.not_serial()] == []


@pytest.mark.spark
def test_where_txsql_goes_beyond_databricks(matrix: ConflictMatrix) -> None:
    beyond = {
        (c.setting.name, c.setting.level, c.ours, c.theirs) for c in matrix.beyond_databricks()
    }
    same_partition = "partitioned, same partition"
    expected = {(same_partition, "WriteSerializable", o, t) for o in DML for t in DML}
    # A DML and a ZORDER BY, either side first, in every setting (rule 3).
    for name in EXPECTED:
        expected |= {(name, "WriteSerializable", o, "ZORDER") for o in DML}
        expected |= {(name, "WriteSerializable", "ZORDER", t) for t in DML}
    # Serializable, a DML racing an INSERT into its own row's scope (same row / partition).
    for name in ("one file, same row", same_partition):
        expected |= {(name, "Serializable", o, "INSERT") for o in DML}
    assert beyond == expected


@pytest.mark.spark
def test_theirs_runs_once_per_layout_and_text(raced: tuple[ConflictMatrix, RaceTrack]) -> None:
    """Theirs starts from the base table whatever ours staged, so its commit is made once
    and copied into every race of that column (each cell still commits ours on top)."""
    matrix, track = raced
    their_texts = {
        (c.setting.layout, STATEMENTS[c.theirs].text("{t}", c.setting.their_key, THEIR_NEW_ID))
        for c in matrix.cells
    }
    assert set(track.commits) == their_texts
    assert len(their_texts) == 21  # of 156 distinct races
    assert track.copies == len(track.cache) + len(their_texts)


@pytest.mark.spark
def test_the_serial_check_can_fail(spark: Any) -> None:
    """An oracle that disagrees with every order marks the cell: the check is not vacuous."""
    wrong_oracle = conflict_matrix(
        spark,
        settings=[SETTINGS[1]],
        levels=("WriteSerializable",),
        rows=["DELETE"],
        columns=["UPDATE"],
        serial_rows=lambda texts: [(1, 1, 1)],
    )
    (cell,) = wrong_oracle.cells
    assert (cell.txsql, cell.serial) == ("✔", False)
    assert cell.rows == ((2, 1, 21), (3, 2, 30), (4, 2, 40))
    assert "≠ serial" in wrong_oracle._repr_html_()


@pytest.mark.spark
def test_the_table_renders_with_a_legend(matrix: ConflictMatrix) -> None:
    page = matrix._repr_html_()
    assert "ConcurrentDeleteRead" in page and "ours ↓ theirs →" in page
    assert page.count("<table") == len(matrix.settings())
    assert "one file, same row · WriteSerializable" in repr(matrix)


ONE_FILE, OTHER_FILE = SETTINGS[1], Setting("one file each", "unpartitioned", 1, 3)
SAME_PART, OTHER_PART = SETTINGS[2], SETTINGS[3]


@pytest.mark.parametrize(
    ("ours", "theirs", "setting", "expected"),
    [
        # Rows of reference/delta-protocol.md §5.6's table (Delta OSS's own test suites).
        ("DELETE", "DELETE", ONE_FILE, "ConcurrentAppend"),  # 32: DVs on one file
        ("DELETE", "DELETE", OTHER_FILE, "ConcurrentAppend"),  # 33: unpartitioned
        ("DELETE", "DELETE", OTHER_PART, "✔"),  # 34: disjoint partitions
        ("OPTIMIZE", "DELETE", SAME_PART, "ConcurrentDeleteRead"),  # 30
        ("OPTIMIZE", "DELETE", ONE_FILE, "ConcurrentDeleteRead"),  # 31
        ("OPTIMIZE", "INSERT", SAME_PART.at("Serializable"), "✔"),  # 29: SnapshotIsolation
        ("UPDATE", "INSERT", SAME_PART.at("Serializable"), "ConcurrentAppend"),  # 6
        ("UPDATE", "INSERT", SAME_PART, "✔"),  # 7: WriteSerializable skips blind appends
        ("UPDATE", "MERGE", SAME_PART, "ConcurrentAppend"),  # 8
        ("INSERT", "DELETE", ONE_FILE, "✔"),  # 1
        # A compaction's dataChange=false files still count as added (§5.4 step 6 note).
        ("UPDATE", "OPTIMIZE", OTHER_PART, "ConcurrentAppend"),
    ],
)
def test_delta_oss_column_follows_its_checker(
    ours: str, theirs: str, setting: Setting, expected: str
) -> None:
    assert delta_oss(ours, theirs, setting) == expected


@pytest.mark.parametrize(
    ("ours", "theirs", "setting", "expected"),
    [
        # reference/isolation-and-concepts.md §2, with and without row-level concurrency.
        ("INSERT", "INSERT", ONE_FILE, "✔"),
        ("UPDATE", "INSERT", SETTINGS[0].at("Serializable"), "✘"),
        ("UPDATE", "INSERT", SETTINGS[0], "✔"),
        ("UPDATE", "DELETE", SETTINGS[0], "✘"),
        ("UPDATE", "DELETE", ONE_FILE, "✔"),
        ("UPDATE", "DELETE", SAME_PART, "✘"),
        ("UPDATE", "DELETE", OTHER_PART, "✔"),
        ("MERGE", "OPTIMIZE", SAME_PART, "✔"),
        ("MERGE", "ZORDER", ONE_FILE, "✘"),
        ("OPTIMIZE", "INSERT", SAME_PART, "✔"),
    ],
)
def test_databricks_column_follows_its_documented_matrix(
    ours: str, theirs: str, setting: Setting, expected: str
) -> None:
    assert databricks(ours, theirs, setting) == expected


def test_a_statement_of_unknown_kind_is_refused_with_a_hint() -> None:
    with pytest.raises(TxSqlError, match="unknown statement kind 'TRUNCATE'") as caught:
        Statement("TRUNCATE", "TRUNCATE {t}")
    assert isinstance(caught.value, ScenarioError)
    assert "How to fix:" in str(caught.value)
