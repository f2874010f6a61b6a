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
from txsql.log.actions import AddFile, CommitInfo, RemoveFile
from txsql.txn.rowlevel.row_map import RowMap, SortedBin, decode_row_map

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


# --- sorting compactions writing several files and bins, rows tracked -----------------------

SORTED_TABLES = {
    # One bin, cut into files of a few rows (part-00000-...-c000, c001, ...).
    "clustered": (
        "CREATE TABLE t (id INT, v INT, p INT) CLUSTER BY (v) TBLPROPERTIES "
        "('delta.enableRowTracking' = 'true', 'delta.targetFileSize' = '300')",
        "OPTIMIZE t FULL",
    ),
    # One bin per partition, one task each.
    "partitioned-zorder": (
        "CREATE TABLE t (id INT, v INT, p INT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
        "OPTIMIZE t ZORDER BY (v, id)",
    ),
}


def _row_ids(s: txsql.Session) -> dict[int, int]:
    rows = s.sql("SELECT id, _metadata.row_id AS rid FROM t").df.collect()
    return {int(r["id"]): int(r["rid"]) for r in rows}


def _sorted_map(s: txsql.Session, version: int) -> RowMap:
    [info] = [a for a in s.table("t").log.read_commit(version) if isinstance(a, CommitInfo)]
    row_map = decode_row_map(info.operation_parameters)
    assert row_map is not None and row_map.order_file is not None, "a sort records its order"
    assert all(isinstance(b, SortedBin) for b in row_map.bins)
    return row_map


@pytest.mark.parametrize("compaction_wins", [True, False], ids=["compaction-wins", "dml-wins"])
@pytest.mark.parametrize("table", sorted(SORTED_TABLES))
def test_sorting_compaction_keeps_row_ids(
    spark: SparkSession, tmp_path: Path, table: str, compaction_wins: bool
) -> None:
    """UPDATE, DELETE and MERGE in turn racing a clustering OPTIMIZE whose one bin becomes
    several files, or a ZORDER of several bins: both commit, the rows are the serial result,
    and every row the DML kept keeps its row id (an updated row too)."""
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    create, compaction = SORTED_TABLES[table]
    s.sql(create)
    s.sql("INSERT INTO t VALUES (1, 5, 0), (2, 3, 1), (3, 8, 0), (4, 1, 1)")
    s.sql("INSERT INTO t VALUES (5, 7, 0), (6, 2, 1), (7, 6, 0), (8, 4, 1), (99, 0, 0)")
    s.sql("DELETE FROM t WHERE id = 99")
    expected = _rows(s)
    for dml in ("update", "delete", "merge"):
        statement, serial = DML[dml]
        if dml == "merge":  # the partition column of the inserted row
            statement = statement.replace("INSERT (id, v) VALUES (s.id, s.v)", "INSERT *")
            statement = statement.replace("60 AS v", "60 AS v, 0 AS p").replace("90", "90, 1")
        ids = _row_ids(s)
        start = s.table("t").version()
        loser = s.begin()
        loser.sql(statement if compaction_wins else compaction)
        s.sql(compaction if compaction_wins else statement)
        assert loser.commit().version == start + 2, f"{compaction} and {dml}: both committed"
        _assert_translated(s, start + 1, start + 2, compaction_wins)
        row_map = _sorted_map(s, start + 1 if compaction_wins else start + 2)
        if table == "clustered":
            assert max(len(b.outputs) for b in row_map.bins if isinstance(b, SortedBin)) > 1
        else:
            assert len(row_map.bins) == 2
        expected = serial(expected)
        assert _rows(s) == expected, f"{compaction} and {dml}: the serial result"
        t = s.table("t")
        assert duckdb_rows(t.location, t.version(), "id, v") == sorted(expected.items())
        after = _row_ids(s)
        kept = ids.keys() & after.keys()
        assert {i: after[i] for i in kept} == {i: ids[i] for i in kept}, "row ids unchanged"
        assert len(set(after.values())) == len(after), "no row id repeats"
