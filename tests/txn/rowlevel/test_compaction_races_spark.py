"""OPTIMIZE / REORG PURGE racing DELETE / UPDATE / MERGE through SQL: both commit.

Each race interleaves two transactions deterministically (``s.begin()`` … ``tx.commit()``)
in both orders. Compaction changes no data, so every serial order ends in the DML's result;
the expected rows are computed here in plain Python from the seed rows, and DuckDB's
``delta_scan`` must read the same final table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.log.actions import AddFile, RemoveFile

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

Rows = dict[int, int]  # id -> v

SEED: Rows = {1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0}


def _update(rows: Rows) -> Rows:
    return {i: (v + 10 if i in (3, 5) else v) for i, v in rows.items()}


def _delete(rows: Rows) -> Rows:
    return {i: v for i, v in rows.items() if i not in (4, 7)}


def _merge(rows: Rows) -> Rows:
    return {**rows, 6: 60, 9: 90}


DML: dict[str, tuple[str, Callable[[Rows], Rows]]] = {
    "update": ("UPDATE t SET v = v + 10 WHERE id IN (3, 5)", _update),
    "delete": ("DELETE FROM t WHERE id IN (4, 7)", _delete),
    "merge": (
        "MERGE INTO t USING (SELECT 6 AS id, 60 AS v UNION ALL SELECT 9, 90) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
        _merge,
    ),
}


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id INT, v INT)")
    session.sql("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
    session.sql("INSERT INTO t VALUES (5, 0), (6, 0), (7, 0), (8, 0), (99, 0)")
    # A DV before the race: the compaction must skip row 99 when it lays rows out.
    session.sql("DELETE FROM t WHERE id = 99")
    return session


def _rows(s: txsql.Session) -> Rows:
    return {int(r[0]): int(r[1]) for r in s.sql("SELECT id, v FROM t").df.collect()}


def _check(s: txsql.Session, expected: Rows) -> None:
    assert _rows(s) == expected
    t = s.table("t")
    assert duckdb_rows(t.location, t.version(), "id, v") == sorted(expected.items())


RACES = [
    ("OPTIMIZE t", "update"),
    ("OPTIMIZE t", "merge"),
    ("REORG TABLE t APPLY (PURGE)", "delete"),
]


SORTED_RACES = [
    ("OPTIMIZE t ZORDER BY (v)", "update"),
    ("OPTIMIZE t ZORDER BY (v, id)", "merge"),
    ("OPTIMIZE t ZORDER BY (id)", "delete"),
]


@pytest.mark.parametrize("compaction_wins", [True, False], ids=["compaction-wins", "dml-wins"])
@pytest.mark.parametrize("races", [RACES, SORTED_RACES], ids=["bin-packing", "sorting"])
def test_compaction_and_dml_both_commit(
    s: txsql.Session, compaction_wins: bool, races: list[tuple[str, str]]
) -> None:
    """Three races in a row on one table (each compaction has DV'd files to work on; a
    sort rewrites every file, through the row order it records)."""
    expected = dict(SEED)
    for compaction, dml in races:
        statement, serial = DML[dml]
        start = s.table("t").version()
        loser = s.begin()
        if compaction_wins:
            loser.sql(statement)
            s.sql(compaction)
        else:
            loser.sql(compaction)
            s.sql(statement)
        committed = loser.commit()
        assert committed.version == start + 2, f"{compaction} and {dml}: both committed"
        _assert_translated(s, start + 1, start + 2, compaction_wins)
        expected = serial(expected)
        assert _rows(s) == expected, f"{compaction} and {dml}: the serial result"
        t = s.table("t")
        assert duckdb_rows(t.location, t.version(), "id, v") == sorted(expected.items())


def _assert_translated(s: txsql.Session, winner: int, loser: int, compaction_won: bool) -> None:
    """The loser really moved rows: onto the compaction's outputs, or into its own DVs."""
    log = s.table("t").log
    won, lost = log.read_commit(winner), log.read_commit(loser)
    if compaction_won:
        outputs = {a.path for a in won if isinstance(a, AddFile)}
        assert outputs & {a.path for a in lost if isinstance(a, RemoveFile)}
    else:
        assert any(isinstance(a, AddFile) and a.deletion_vector for a in lost), (
            "the compaction re-marked the DML's deletions on its new files"
        )
