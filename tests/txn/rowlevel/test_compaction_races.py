"""Compaction row maps without Spark: position translation and both race orders.

The oracle is a plain list model: an output file's rows are its sources' rows concatenated,
minus the rows their DVs delete; the tests compute the expected ids from that model, not
from :mod:`txsql.txn.rowlevel.compaction_races`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from pyroaring import BitMap64

from tests.txn.harness import Lab
from txsql.errors import CommitConflictError, ConcurrentDeleteReadError
from txsql.log.actions import Action, AddFile, RemoveFile
from txsql.log.predicates import TRUE, Column, Comparison, Literal
from txsql.txn.result import CommitResult
from txsql.txn.rowlevel.row_map import (
    ROW_MAP_PARAM,
    OutputBin,
    RowMap,
    Source,
    UntranslatableError,
    decode_row_map,
    encode_row_map,
    translate,
)
from txsql.txn.transaction import Transaction


def test_translate_skips_layout_deleted_rows_and_offsets_by_earlier_sources() -> None:
    row_map = RowMap((OutputBin("o", (Source("a", 5, None), Source("b", 4, None))),))
    layout = {"a": BitMap64([1]), "b": BitMap64()}
    # a's live rows 0,2,3,4 land at 0..3; b's rows 0..3 land at 4..7.
    out = translate(row_map, {"a": BitMap64([0, 4]), "b": BitMap64([0, 3])}, layout)
    assert out == {"o": BitMap64([0, 3, 4, 7])}
    with pytest.raises(UntranslatableError):
        translate(row_map, {"a": BitMap64([1])}, layout)  # row 1 was never copied
    with pytest.raises(UntranslatableError):
        translate(row_map, {"b": BitMap64([4])}, layout)  # past the end of b


def test_row_map_round_trips_through_json() -> None:
    row_map = RowMap(
        (
            OutputBin("p=1/o%20x.parquet", (Source("a b.parquet", 3, None),)),
            OutputBin(None, (Source("c.parquet", 2, None),)),
        )
    )
    decoded = decode_row_map({ROW_MAP_PARAM: encode_row_map(row_map)})
    assert decoded is not None
    assert decoded.output_paths == {"p=1/o x.parquet"}, "paths normalized like log replay"
    assert decoded.source_paths == {"a b.parquet", "c.parquet"}
    assert decode_row_map({ROW_MAP_PARAM: "{not json"}) is None
    assert decode_row_map({}) is None


# --- interleavings on the in-memory table ---------------------------------------------------


def _setup(**lab_options: Any) -> tuple[Lab, AddFile, AddFile]:
    """f1 holds ids 0..4 (id 1 deleted by a DV), f2 holds ids 5..9."""
    lab = Lab(**lab_options)
    f1, f2 = lab.file("f1", range(5)), lab.file("f2", range(5, 10))
    lab.commit([f1, f2], blind=True)
    lab.commit(lab.dv_delete(f1, [1]), "DELETE", read_files=[f1])
    return lab, lab.current("f1.parquet"), f2


def _compaction_actions(
    lab: Lab, sources: Sequence[AddFile], name: str = "opt"
) -> tuple[list[Action], str]:
    """OPTIMIZE of ``sources`` into one file: the actions and the row map parameter."""
    out_ids = [i for f in sources for i in _live_ids(lab, f)]
    out = lab.file(name, out_ids, data_change=False)
    row_map = RowMap(
        (
            OutputBin(
                out.path,
                tuple(Source(f.path, _rows(f), f.deletion_vector) for f in sources),
            ),
        )
    )
    actions: list[Action] = [f.to_remove(data_change=False) for f in sources]
    return [*actions, out], encode_row_map(row_map)


def _rows(f: AddFile) -> int:
    return int(json.loads(f.stats or "{}")["numRecords"])


def _ids_of(f: AddFile) -> list[int]:
    """The harness's files hold consecutive ids starting at their minimum."""
    low = int(json.loads(f.stats or "{}")["minValues"]["id"])
    return list(range(low, low + _rows(f)))


_OUTPUT_IDS: dict[str, list[int]] = {}


def _live_ids(lab: Lab, f: AddFile) -> list[int]:
    ids = _OUTPUT_IDS.get(f.path) or _ids_of(f)
    deleted = lab.deleted_rows(f)
    return [v for i, v in enumerate(ids) if i not in deleted]


def _table_ids(lab: Lab) -> list[int]:
    return sorted(v for f in lab.log.snapshot().files for v in _live_ids(lab, f))


def _commit_compaction(lab: Lab, sources: Sequence[AddFile], name: str = "opt") -> CommitResult:
    actions, param = _compaction_actions(lab, sources, name)
    t = lab.txn()
    t.record_scan(TRUE, list(sources))
    t.stage(actions)
    _remember_output(lab, actions)
    return t.commit("OPTIMIZE", {ROW_MAP_PARAM: param})


def _remember_output(lab: Lab, actions: Sequence[Action]) -> None:
    removed = [a for a in actions if isinstance(a, RemoveFile)]
    (out,) = [a for a in actions if isinstance(a, AddFile)]
    snapshot = {f.path: f for f in lab.log.snapshot().files}
    _OUTPUT_IDS[out.path] = [i for r in removed for i in _live_ids(lab, snapshot[r.path])]


def _dml_delete(lab: Lab, f: AddFile, rows: list[int]) -> Transaction:
    t = lab.txn()
    t.record_scan(Comparison("=", Column("id"), Literal(0)), [f], {f.path: BitMap64(rows)})
    t.stage(lab.dv_delete(f, rows))
    return t


def test_dml_that_lost_to_a_compaction_lands_its_deletes_on_the_output() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    dml = _dml_delete(lab, f1, [3])  # id 3
    dml2_rows = [0]  # id 5 of f2, a second file of the same output
    dml.record_scan(TRUE, [f2], {f2.path: BitMap64(dml2_rows)})
    dml.stage(lab.dv_delete(f2, dml2_rows))
    _commit_compaction(lab, [f1, f2])
    result = dml.commit("DELETE")
    assert result.rebased_files == ("opt.parquet",)
    assert _table_ids(lab) == [0, 2, 4, 6, 7, 8, 9], "serial: OPTIMIZE then DELETE 3, 5"


def test_compaction_that_lost_to_a_dml_carries_its_deletes() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    actions, param = _compaction_actions(lab, [f1, f2])
    opt = lab.txn()
    opt.record_scan(TRUE, [f1, f2])
    opt.stage(actions)
    _remember_output(lab, actions)
    lab.commit(lab.dv_delete(f1, [3]), "DELETE", read_files=[f1])  # id 3
    lab.commit(lab.dv_delete(lab.current("f2.parquet"), [4]), "DELETE", read_files=[f2])
    result = opt.commit("OPTIMIZE", {ROW_MAP_PARAM: param})
    assert result.winners == (3, 4)
    assert {f.path for f in lab.log.snapshot().files} == {"opt.parquet"}
    assert _table_ids(lab) == [0, 2, 4, 5, 6, 7, 8], "serial: DELETE 3, 9 then OPTIMIZE"


def test_a_compaction_without_row_map_still_conflicts_with_a_clear_hint() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, _ = _setup()
    dml = _dml_delete(lab, f1, [3])
    actions, _ = _compaction_actions(lab, [f1])
    lab.commit(actions, "OPTIMIZE", read_files=[f1])
    with pytest.raises(ConcurrentDeleteReadError, match="no row map"):
        dml.commit("DELETE")


def test_a_winner_that_revives_rows_stops_the_compaction() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    actions, param = _compaction_actions(lab, [f1, f2])
    opt = lab.txn()
    opt.record_scan(TRUE, [f1, f2])
    opt.stage(actions)
    # A RESTORE-like winner replaces f1's DV {1} by an empty-ish DV {4}: id 1 comes back.
    revived = lab.dv_delete(lab.file("f1", range(5)), [4])
    lab.commit([f1.to_remove(), *[a for a in revived if isinstance(a, AddFile)]], "RESTORE")
    with pytest.raises(ConcurrentDeleteReadError):
        opt.commit("OPTIMIZE", {ROW_MAP_PARAM: param})


def test_a_later_winner_deleting_translated_read_rows_conflicts() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    dml = _dml_delete(lab, f1, [3])  # reads and deletes id 3 (row 3 of f1, row 2 of opt)
    _commit_compaction(lab, [f1, f2])
    out = lab.current("opt.parquet")
    lab.commit(lab.dv_delete(out, [2]), "DELETE", read_files=[out])  # deletes id 3 too
    with pytest.raises(ConcurrentDeleteReadError):
        dml.commit("DELETE")
    assert _table_ids(lab) == [0, 2, 4, 5, 6, 7, 8, 9]


def test_whole_file_removals_translate_in_both_orders() -> None:
    # The compaction loses to a DELETE that removes all of f2 (no DV: the file goes).
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    actions, param = _compaction_actions(lab, [f1, f2])
    opt = lab.txn()
    opt.record_scan(TRUE, [f1, f2])
    opt.stage(actions)
    _remember_output(lab, actions)
    lab.commit([f2.to_remove()], "DELETE", read_files=[f2])
    opt.commit("OPTIMIZE", {ROW_MAP_PARAM: param})
    assert _table_ids(lab) == [0, 2, 3, 4], "serial: DELETE f2's rows, then OPTIMIZE"
    # A DELETE of every live row of the output loses to a second compaction of it.
    out = lab.current("opt.parquet")
    dml = lab.txn()
    dml.record_scan(TRUE, [out], {out.path: BitMap64([0, 1, 2, 3])})
    dml.stage([out.to_remove()])
    _commit_compaction(lab, [out], "opt2")
    result = dml.commit("DELETE")
    assert result.rebased_files == ("opt2.parquet",)
    assert _table_ids(lab) == []
    assert [f.path for f in lab.log.snapshot().files] == [], "every row deleted: file removed"


def test_build_row_map_ties_each_bin_to_its_task_file() -> None:
    from txsql.planner.operations.compaction_maps import build_row_map
    from txsql.txn.rowlevel.row_map import OutputBin

    lab = Lab()
    a, b, c = lab.file("a", range(3)), lab.file("b", range(3, 5)), lab.file("c", range(5, 9))
    (dv,) = lab.dv_delete(a, [0])[1:]  # a with row 0 deleted: 2 live rows
    assert isinstance(dv, AddFile)
    first = lab.file("p=x/part-00000-u.c000", range(4))  # a's 2 live rows + b's 2
    second = lab.file("p=x/part-00001-u.c000", range(4))
    row_map = build_row_map([[dv, b], [c]], [second, first])
    assert row_map is not None
    assert [bin.path for bin in row_map.bins if isinstance(bin, OutputBin)] == [
        first.path,
        second.path,
    ]
    assert [s.path for s in row_map.bins[0].sources] == ["a.parquet", "b.parquet"]
    assert row_map.bins[0].sources[0].layout_dv == dv.deletion_vector
    short = lab.file("p=x/part-00001-u.c000", range(3))
    assert build_row_map([[dv, b], [c]], [first, short]) is None, "row count must match"
    assert build_row_map([[dv, b], [c]], [first, first]) is None, "one file per task"


def test_a_row_map_that_disagrees_with_the_commit_is_not_trusted() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    dml = _dml_delete(lab, f1, [3])
    actions, _ = _compaction_actions(lab, [f1, f2])
    lying = RowMap(
        (OutputBin("opt.parquet", (Source(f1.path, 5, None), Source(f2.path, 5, None))),)
    )
    t = lab.txn()
    t.record_scan(TRUE, [f1, f2])
    t.stage(actions)
    t.commit("OPTIMIZE", {ROW_MAP_PARAM: encode_row_map(lying)})  # ignores f1's DV: 10 != 9
    with pytest.raises(ConcurrentDeleteReadError, match="no row map"):
        dml.commit("DELETE")


@pytest.mark.parametrize(
    "options",
    [{"row_level": False}, {"row_level": True, "conf": {"delta.enableDeletionVectors": "false"}}],
)
def test_no_translation_under_file_level_rules_or_without_dv_writes(
    options: dict[str, Any],
) -> None:
    """Delta's file-level rules stay as they are; a table that may not get new DVs too."""
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup(**options)
    dml = _dml_delete(lab, f1, [3])
    _commit_compaction(lab, [f1, f2])
    with pytest.raises(CommitConflictError):
        dml.commit("DELETE")


def test_two_compactions_of_the_same_files_still_conflict() -> None:
    _OUTPUT_IDS.clear()
    lab, f1, f2 = _setup()
    unmapped = lab.txn()  # e.g. a ZORDER: no row map of its own
    actions, _ = _compaction_actions(lab, [f1, f2], "zorder")
    unmapped.record_scan(TRUE, [f1, f2])
    unmapped.stage(actions)
    _commit_compaction(lab, [f1, f2])
    with pytest.raises(CommitConflictError):
        unmapped.commit("OPTIMIZE")
    assert _table_ids(lab) == [0, 2, 3, 4, 5, 6, 7, 8, 9]
