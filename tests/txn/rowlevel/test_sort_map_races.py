"""A sorting compaction's row map (format 2) through the commit path, without Spark.

The compaction of f1 (ids 0..4, id 1 deleted by a DV) and f2 (ids 5..9) writes the nine
live rows in a seeded random order into two files. The oracle is a list model of which id
each output row holds; the expected ids come from it, not from the translation code.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from pyroaring import BitMap64

from tests.txn.harness import ROOT, Lab
from txsql.errors import CommitConflictError
from txsql.log.actions import Action, AddFile
from txsql.log.predicates import TRUE, Column, Comparison, Literal
from txsql.txn.rowlevel.row_map import ROW_MAP_PARAM, RowMap, SortedBin, Source, encode_row_map
from txsql.txn.rowlevel.sort_map import encode_order
from txsql.txn.transaction import Transaction

ORDER_FILE = "_txsql_row_orders/race.bin"


class Race:
    """The lab table and the compaction's outputs: which id each output row holds."""

    def __init__(self, seed: int, *, order_written: bool = True) -> None:
        self.lab = Lab()
        f1, f2 = self.lab.file("f1", range(5)), self.lab.file("f2", range(5, 10))
        self.lab.commit([f1, f2], blind=True)
        self.lab.commit(self.lab.dv_delete(f1, [1]), "DELETE", read_files=[f1])
        self.f1, self.f2 = self.lab.current("f1.parquet"), f2
        live = [p for p in range(10) if p != 1]  # bin positions = ids here
        order = random.Random(seed).sample(live, len(live))
        self.ids = {"o1.parquet": order[:5], "o2.parquet": order[5:]}
        if order_written:
            self.lab.fs.write(f"{ROOT}/{ORDER_FILE}", encode_order([np.array(order)]))
        self.outputs = [
            self.lab.file("o1", order[:5], data_change=False),
            self.lab.file("o2", order[5:], data_change=False),
        ]

    def row_map(self, counts: tuple[int, int] = (5, 4)) -> str:
        sources = (
            Source(self.f1.path, 5, self.f1.deletion_vector),
            Source(self.f2.path, 5, None),
        )
        outputs = (("o1.parquet", counts[0]), ("o2.parquet", counts[1]))
        return encode_row_map(RowMap((SortedBin(outputs, sources),), ORDER_FILE))

    def compaction(self) -> Transaction:
        t = self.lab.txn()
        t.record_scan(TRUE, [self.f1, self.f2])
        actions: list[Action] = [f.to_remove(data_change=False) for f in (self.f1, self.f2)]
        t.stage([*actions, *self.outputs])
        return t

    def delete(self, f: AddFile, rows: list[int]) -> Transaction:
        t = self.lab.txn()
        t.record_scan(Comparison("=", Column("id"), Literal(0)), [f], {f.path: BitMap64(rows)})
        t.stage(self.lab.dv_delete(f, rows))
        return t

    def table_ids(self) -> list[int]:
        """The live ids of the table, by the list model."""
        ids = {"f1.parquet": list(range(5)), "f2.parquet": list(range(5, 10)), **self.ids}
        out = []
        for f in self.lab.log.snapshot().files:
            deleted = self.lab.deleted_rows(f)
            out += [v for i, v in enumerate(ids[f.path]) if i not in deleted]
        return sorted(out)


EXPECTED = [0, 2, 4, 6, 7, 8]  # ids 1 (before), 3, 5 and 9 (the DML) deleted


@pytest.mark.parametrize("seed", range(5))
def test_dml_that_lost_lands_its_deletes_on_the_sorted_outputs(seed: int) -> None:
    race = Race(seed)
    dml = race.delete(race.f1, [3])
    dml.record_scan(TRUE, [race.f2], {race.f2.path: BitMap64([0, 4])})
    dml.stage(race.lab.dv_delete(race.f2, [0, 4]))  # ids 5 and 9
    race.compaction().commit("OPTIMIZE", {ROW_MAP_PARAM: race.row_map()})
    result = dml.commit("DELETE")
    assert set(result.rebased_files) <= {"o1.parquet", "o2.parquet"}
    assert race.table_ids() == EXPECTED, "serial: OPTIMIZE, then DELETE 3, 5, 9"


@pytest.mark.parametrize("seed", range(5))
def test_sorted_compaction_that_lost_carries_the_deletes(seed: int) -> None:
    race = Race(seed)
    opt = race.compaction()
    race.lab.commit(race.lab.dv_delete(race.f1, [3]), "DELETE", read_files=[race.f1])
    race.lab.commit(race.lab.dv_delete(race.f2, [0, 4]), "DELETE", read_files=[race.f2])
    result = opt.commit("OPTIMIZE", {ROW_MAP_PARAM: race.row_map()})
    assert len(result.winners) == 2
    assert {f.path for f in race.lab.log.snapshot().files} == {"o1.parquet", "o2.parquet"}
    assert race.table_ids() == EXPECTED, "serial: DELETE 3, 5, 9, then OPTIMIZE"


@pytest.mark.parametrize(
    "how", ["order file missing", "counts disagree with the commit"], ids=["missing", "counts"]
)
def test_a_sorted_map_that_cannot_be_used_keeps_the_conflict(how: str) -> None:
    race = Race(0, order_written=how != "order file missing")
    param = race.row_map((6, 3) if how == "counts disagree with the commit" else (5, 4))
    dml = race.delete(race.f1, [3])
    race.compaction().commit("OPTIMIZE", {ROW_MAP_PARAM: param})
    with pytest.raises(CommitConflictError):
        dml.commit("DELETE")
    assert race.table_ids() == [0, 2, 3, 4, 5, 6, 7, 8, 9], "the compaction alone"
