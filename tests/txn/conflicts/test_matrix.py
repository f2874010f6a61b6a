"""The write-conflict matrix of Databricks' isolation-level documentation as a table.

Table: partitioned by ``x``; partition x=1 holds file f1 with ids 0..9 (row index = id),
x=2 holds f2 with ids 10..19. Our statement targets id 3. The winner targets:
``same-row`` id 3, ``different-row`` id 5 (same file), ``different-partition`` id 15.

* INSERT: a blind append of one row with the target id (into its partition).
* DML (UPDATE/DELETE/MERGE): ``WHERE x = <p> AND id = <id>``: marks the row in the file's
  DV and writes the updated row to a new file (an UPDATE; DELETE/MERGE commit the same
  shapes).
* OPTIMIZE: compacts the target partition's file(s) (dataChange=false).

Columns of each expectation: WriteSerializable/row-level, Serializable/row-level,
WriteSerializable/file-level, Serializable/file-level ("ok" = our commit lands).

Where txsql differs from Databricks' published matrix: DML vs OPTIMIZE on the same files
conflicts here (Databricks: only with ZORDER) because this OPTIMIZE records no row map, as
another engine's would not; txsql translates row positions only through its own
compactions (ARCHITECTURE.md, "Compaction and DML";
tests/txn/rowlevel/test_compaction_races_spark.py). Without a row map it is Delta OSS's
behaviour.
"""

from __future__ import annotations

import pytest
from pyroaring import BitMap64

from tests.txn.harness import Lab
from txsql.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
)
from txsql.log.actions import Action, AddFile
from txsql.log.predicates import And, Column, Comparison, Literal, Predicate
from txsql.txn.transaction import Transaction

TARGET = {"same-row": 3, "different-row": 5, "different-partition": 15}
EXPECTED = {
    "ok": None,
    "Append": ConcurrentAppendError,
    "DeleteRead": ConcurrentDeleteReadError,
}
# (ours, winner, overlap): outcomes for WS/row, S/row, WS/file, S/file
MATRIX = [
    ("INSERT", "INSERT", "same-row", "ok ok ok ok"),
    ("INSERT", "INSERT", "different-row", "ok ok ok ok"),
    ("INSERT", "INSERT", "different-partition", "ok ok ok ok"),
    ("INSERT", "DML", "same-row", "ok ok ok ok"),
    ("INSERT", "DML", "different-row", "ok ok ok ok"),
    ("INSERT", "DML", "different-partition", "ok ok ok ok"),
    ("INSERT", "OPTIMIZE", "same-row", "ok ok ok ok"),
    ("INSERT", "OPTIMIZE", "different-partition", "ok ok ok ok"),
    # DML vs a concurrent INSERT: WS orders the blind append after us; S conflicts only
    # when the inserted row satisfies our predicate (row level) / lands in our partition.
    ("DML", "INSERT", "same-row", "ok Append ok Append"),
    ("DML", "INSERT", "different-row", "ok ok ok Append"),
    ("DML", "INSERT", "different-partition", "ok ok ok ok"),
    # DML vs DML: row level conflicts only on the same row; file level on the same file.
    # Same row: the winner's UPDATE rewrote row 3 into a new file that satisfies our
    # predicate, and the append check runs first (Delta's order), so ConcurrentAppend.
    # (A DELETE vs DELETE of one row fails on the rows instead: see test_row_level.py.)
    ("DML", "DML", "same-row", "Append Append Append Append"),
    ("DML", "DML", "different-row", "ok ok Append Append"),
    ("DML", "DML", "different-partition", "ok ok ok ok"),
    ("DML", "OPTIMIZE", "same-row", "DeleteRead DeleteRead Append Append"),
    ("DML", "OPTIMIZE", "different-partition", "ok ok ok ok"),
    # OPTIMIZE changes no data: checked as SnapshotIsolation, only its removed files count.
    ("OPTIMIZE", "INSERT", "same-row", "ok ok ok ok"),
    ("OPTIMIZE", "INSERT", "different-partition", "ok ok ok ok"),
    ("OPTIMIZE", "DML", "same-row", "DeleteRead DeleteRead DeleteRead DeleteRead"),
    ("OPTIMIZE", "DML", "different-row", "DeleteRead DeleteRead DeleteRead DeleteRead"),
    ("OPTIMIZE", "DML", "different-partition", "ok ok ok ok"),
    ("OPTIMIZE", "OPTIMIZE", "same-row", "DeleteRead DeleteRead DeleteRead DeleteRead"),
    ("OPTIMIZE", "OPTIMIZE", "different-partition", "ok ok ok ok"),
]
SETTINGS = [
    ("WriteSerializable", True),
    ("Serializable", True),
    ("WriteSerializable", False),
    ("Serializable", False),
]


def _partition(row: int) -> str:
    return "1" if row < 10 else "2"


def _predicate(row: int) -> Predicate:
    return And(
        (
            Comparison("=", Column("x"), Literal(int(_partition(row)))),
            Comparison("=", Column("id"), Literal(row)),
        )
    )


class Table:
    def __init__(self, isolation: str, row_level: bool) -> None:
        self.lab = Lab(("x",), isolation=isolation, row_level=row_level)
        self.files = {
            "1": self.lab.file("f1", range(10), {"x": "1"}),
            "2": self.lab.file("f2", range(10, 20), {"x": "2"}),
        }
        self.lab.commit(list(self.files.values()), blind=True)
        self.counter = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def insert(
        self, row: int
    ) -> tuple[Predicate | None, list[AddFile], dict[str, BitMap64], list[Action]]:
        return None, [], {}, [self.lab.file(self.name("ins"), [row], {"x": _partition(row)})]

    def dml(
        self, row: int
    ) -> tuple[Predicate | None, list[AddFile], dict[str, BitMap64], list[Action]]:
        f = self.files[_partition(row)]
        index = row % 10
        actions = [
            *self.lab.dv_delete(f, [index]),
            self.lab.file(self.name("upd"), [row], {"x": _partition(row)}),
        ]
        return _predicate(row), [f], {f.path: BitMap64([index])}, actions

    def optimize(
        self, row: int
    ) -> tuple[Predicate | None, list[AddFile], dict[str, BitMap64], list[Action]]:
        part = _partition(row)
        f = self.files[part]
        ids = range(10) if part == "1" else range(10, 20)
        out = self.lab.file(self.name("opt"), ids, {"x": part}, data_change=False)
        pred = Comparison("=", Column("x"), Literal(int(part)))
        return pred, [f], {}, [self.lab.remove(f, data_change=False), out]

    def statement(
        self, kind: str, row: int
    ) -> tuple[Predicate | None, list[AddFile], dict[str, BitMap64], list[Action]]:
        return {"INSERT": self.insert, "DML": self.dml, "OPTIMIZE": self.optimize}[kind](row)


def _begin(table: Table, kind: str, row: int) -> Transaction:
    pred, files, rows, actions = table.statement(kind, row)
    txn = table.lab.txn()
    if pred is not None:
        txn.record_scan(pred, files, rows if kind == "DML" else None)
    txn.stage(actions)
    return txn


def _cases() -> list[pytest.ParameterSet]:
    out = []
    for ours, winner, overlap, outcomes in MATRIX:
        for (level, row_level), outcome in zip(SETTINGS, outcomes.split()):
            short = "S" if level == "Serializable" else "WS"
            mode = "row" if row_level else "file"
            out.append(
                pytest.param(
                    ours,
                    winner,
                    overlap,
                    level,
                    row_level,
                    outcome,
                    id=f"{ours}-vs-{winner}-{overlap}-{short}-{mode}",
                )
            )
    return out


@pytest.mark.parametrize(("ours", "winner", "overlap", "level", "row_level", "outcome"), _cases())
def test_write_conflict_matrix(
    ours: str, winner: str, overlap: str, level: str, row_level: bool, outcome: str
) -> None:
    table = Table(level, row_level)
    mine = _begin(table, ours, 3)
    theirs = _begin(table, winner, TARGET[overlap])
    won = theirs.commit(winner)
    assert won.commit_info.is_blind_append is (winner == "INSERT")
    expected = EXPECTED[outcome]
    if expected is None:
        assert mine.commit(ours).version == won.version + 1
    else:
        with pytest.raises(expected) as info:
            mine.commit(ours)
        assert info.value.winning_version == won.version
        if outcome == "Append":
            assert info.value.partitions == ("x=1",)


@pytest.mark.parametrize(
    ("level", "conflicts"), [("Serializable", True), ("WriteSerializable", False)]
)
@pytest.mark.parametrize("row_level", [True, False])
def test_long_delete_vs_insert_example(level: str, conflicts: bool, row_level: bool) -> None:
    """A DELETE and an INSERT start from v0; INSERT commits v1; the DELETE tries v2
    (ARCHITECTURE.md, "Conflict checks": the example that tells the levels apart)."""
    lab = Lab(isolation=level, row_level=row_level)
    f = lab.file("f", range(10))
    lab.commit([f], blind=True)
    delete = lab.txn()
    predicate = Comparison(">", Column("v"), Literal(5))
    delete.record_scan(predicate, [f], {f.path: BitMap64(range(6, 10))})
    delete.stage(lab.dv_delete(f, range(6, 10)))
    lab.commit([lab.file("ins", [7, 8])], blind=True)  # rows the DELETE would have matched
    if conflicts:
        with pytest.raises(ConcurrentAppendError):
            delete.commit("DELETE")
    else:
        result = delete.commit("DELETE")
        assert [i.operation for i in (result.commit_info,)] == ["DELETE"]
        assert "ins.parquet" in {x.path for x in lab.log.snapshot().files}, "inserted rows survive"
