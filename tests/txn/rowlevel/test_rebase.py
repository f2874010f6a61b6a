"""Row-level conflict resolution on deletion vectors: rebases, merged DVs, fallbacks."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from pyroaring import BitMap64

from tests.txn.harness import Lab
from txsql.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
)
from txsql.log.actions import AddFile, RemoveFile
from txsql.log.codec import decode_commit
from txsql.log.predicates import Column, Comparison, Literal, LiteralValue, Predicate
from txsql.txn.rowlevel.state import loosen_stats
from txsql.txn.transaction import Transaction


def eq(col: str, value: LiteralValue) -> Comparison:
    return Comparison("=", Column(col), Literal(value))


def _table(rows: int = 10, **kwargs: object) -> tuple[Lab, AddFile]:
    lab = Lab(**kwargs)  # type: ignore[arg-type]
    f = lab.file("f", range(rows))
    lab.commit([f], blind=True)
    return lab, f


def _delete(lab: Lab, f: AddFile, rows: Sequence[int], *, record_rows: bool = True) -> Transaction:
    """Our DELETE ... WHERE id IN rows, merge-on-read (rows = physical indexes = ids)."""
    txn = lab.txn()
    matched = {f.path: BitMap64(rows)} if record_rows else None
    txn.record_scan(eq("id", rows[0]), [f], matched)
    txn.stage(lab.dv_delete(f, rows))
    return txn


def _winner_delete(lab: Lab, f: AddFile, rows: Sequence[int]) -> int:
    return lab.commit(
        lab.dv_delete(f, rows), "DELETE", read=eq("id", rows[0]), read_files=[f]
    ).version


def test_disjoint_dv_deletes_rebase_onto_a_merged_dv() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [2, 7])
    mine_before = {a.path: a for a in ours.staged if isinstance(a, AddFile)}
    winner = _winner_delete(lab, f, [1])
    result = ours.commit("DELETE")
    assert result.version == winner + 1
    assert result.read_version == 1, "commitInfo keeps the original readVersion"
    assert result.rebased_files == ("f.parquet",)
    live = lab.current("f.parquet")
    assert lab.deleted_rows(live) == {1, 2, 7}, "merged DV = winner's | ours"
    assert live.deletion_vector is not None and live.deletion_vector.cardinality == 3
    assert json.loads(live.stats or "{}")["tightBounds"] is False
    assert json.loads(live.stats or "{}")["numRecords"] == 10, "stats kept"
    written = decode_commit(lab.log.store.read_commit(result.version))
    (remove,) = [a for a in written if isinstance(a, RemoveFile)]
    winner_add = next(
        a for a in decode_commit(lab.log.store.read_commit(winner)) if isinstance(a, AddFile)
    )
    assert remove.deletion_vector == winner_add.deletion_vector, "remove(F, winner's DV)"
    assert {a.path for a in written if isinstance(a, AddFile)} == set(mine_before), (
        "no data file rewritten"
    )
    info = result.commit_info
    assert (info.read_version, info.isolation_level, info.is_blind_append) == (
        1,
        "WriteSerializable",
        False,
    )


def test_rebase_across_several_winners_accumulates_rows() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [9])
    _winner_delete(lab, f, [1])
    _winner_delete(lab, lab.current("f.parquet"), [2, 3])
    result = ours.commit("DELETE")
    assert result.winners == (2, 3)
    assert lab.deleted_rows(lab.current("f.parquet")) == {1, 2, 3, 9}


def test_union_deleting_every_row_commits_just_the_remove() -> None:
    lab, f = _table(rows=4)
    ours = _delete(lab, f, [2, 3])
    _winner_delete(lab, f, [0, 1])
    result = ours.commit("DELETE")
    assert [a for a in result.actions if isinstance(a, AddFile)] == []
    assert "f.parquet" not in {x.path for x in lab.log.snapshot().files}


def test_same_row_conflicts_with_row_details() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [2, 3])
    winner = _winner_delete(lab, f, [3, 4])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        ours.commit("DELETE")
    err = info.value
    assert err.rows == {"f.parquet": (3,)}
    assert err.files == ("f.parquet",)
    assert err.winning_version == winner and err.winning_operation == "DELETE"
    assert err.isolation_level == "WriteSerializable"
    assert "row level" in err.rule
    assert f"changed by version {winner}" in err.hint
    assert "3" in err.message


def test_modified_rows_not_reported_as_read_conflict_as_delete_delete() -> None:
    # A writer that staged a DV change without recording matched rows for the scan.
    lab, f = _table()
    ours = lab.txn()
    ours.stage(lab.dv_delete(f, [5]))
    _winner_delete(lab, f, [5])
    with pytest.raises(ConcurrentDeleteDeleteError) as info:
        ours.commit("DELETE")
    assert info.value.rows == {"f.parquet": (5,)}


def test_rows_read_but_not_changed_are_checked_too() -> None:
    # Serializable write skew: we read row 4 (and wrote elsewhere); the winner deleted it.
    lab, f = _table(isolation="Serializable")
    ours = lab.txn()
    ours.record_scan(eq("id", 4), [f], {f.path: BitMap64([4])})
    ours.stage([lab.file("other", [100])])
    _winner_delete(lab, f, [4])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        ours.commit("INSERT")
    assert info.value.rows == {"f.parquet": (4,)}


def test_unknown_matched_rows_fall_back_to_file_level() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [2], record_rows=False)
    _winner_delete(lab, f, [1])
    with pytest.raises(ConcurrentAppendError):
        ours.commit("DELETE")


def test_row_level_off_behaves_like_delta() -> None:
    lab, f = _table(row_level=False)
    ours = _delete(lab, f, [2])
    _winner_delete(lab, f, [1])
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("DELETE")
    assert "unpartitioned" in info.value.rule
    assert "rowLevelConcurrency" in info.value.hint


def test_whole_table_read_is_file_level() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [2])
    ours.mark_read_whole_table()
    _winner_delete(lab, f, [1])
    with pytest.raises(ConcurrentAppendError):
        ours.commit("DELETE")


def test_winner_removing_the_file_entirely_is_a_delete_read_conflict() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [2])
    lab.commit([lab.remove(f)], "DELETE", read=eq("id", 1), read_files=[f])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        ours.commit("DELETE")
    # Still Delta's file-level rule, but the card names the row we matched that went away.
    assert info.value.rows == {"f.parquet": (2,)} and info.value.files == ("f.parquet",)
    assert info.value.rule.startswith("a file we read was removed")
    assert "same-row write" in info.value.rule


def test_winner_removing_a_file_we_matched_nothing_in_names_no_rows() -> None:
    lab, f = _table()
    ours = lab.txn()
    ours.record_scan(eq("id", 50), [f], {f.path: BitMap64()})
    ours.stage([lab.file("mine", [50])])
    lab.commit([lab.remove(f)], "DELETE", read=eq("id", 1), read_files=[f])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        ours.commit("WRITE")
    assert info.value.rows is None and info.value.rule == "a file we read was removed"


def test_row_predicate_hook_decides_added_rows() -> None:
    calls: list[tuple[Predicate, list[str]]] = []

    def none_match(predicate: Predicate, files: Sequence[AddFile]) -> bool:
        calls.append((predicate, [a.path for a in files]))
        return False

    lab, f = _table()
    ours = Transaction(lab.log, row_predicate_checker=none_match)
    ours.record_scan(eq("v", 3), [f], {f.path: BitMap64([3])})
    ours.stage(lab.dv_delete(f, [3]))
    # A non-blind winner adds a file whose stats (ids 0..9) cannot exclude v = 3.
    lab.commit([lab.file("new", range(10))], "MERGE", read=eq("id", 50))
    assert ours.commit("DELETE").version == 3
    assert calls == [(eq("v", 3), ["new.parquet"])]


def test_row_predicate_hook_reporting_a_match_conflicts() -> None:
    lab, f = _table()
    ours = Transaction(lab.log, row_predicate_checker=lambda p, files: True)
    ours.record_scan(eq("v", 3), [f], {f.path: BitMap64([3])})
    ours.stage(lab.dv_delete(f, [3]))
    lab.commit([lab.file("new", range(10))], "MERGE", read=eq("id", 50))
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("DELETE")
    assert info.value.rule == "rows were added that satisfy our read predicate"


def test_stats_exclude_added_files_without_a_hook() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [3])
    lab.commit([lab.file("new", range(100, 110))], "MERGE", read=eq("id", 100))
    assert ours.commit("DELETE").version == 3


def test_added_files_without_stats_conflict() -> None:
    lab, f = _table()
    ours = _delete(lab, f, [3])
    lab.commit([lab.file("new", range(100, 110), stats=False)], "MERGE", read=eq("id", 100))
    with pytest.raises(ConcurrentAppendError):
        ours.commit("DELETE")


def test_partitioned_table_rebases_too() -> None:
    lab = Lab(("x",))
    f = lab.file("f", range(10), {"x": "1"})
    lab.commit([f], blind=True)
    ours = lab.txn()
    ours.record_scan(eq("x", 1), [f], {f.path: BitMap64([8])})
    ours.stage(lab.dv_delete(f, [8]))
    _winner_delete(lab, f, [0])
    ours.commit("DELETE")
    assert lab.deleted_rows(lab.current("x=1/f.parquet")) == {0, 8}


def test_non_deterministic_predicate_falls_back_to_file_level() -> None:
    from txsql.log.predicates import Opaque

    lab, f = _table()
    ours = lab.txn()
    ours.record_scan(Opaque("rand() < 0.5", frozenset(), deterministic=False), [f])
    ours.stage([lab.file("mine", [1])])
    lab.commit([lab.file("new", range(100, 110))], "MERGE", read=eq("id", 100))
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("WRITE")
    assert "non-deterministic" in info.value.rule


# --- winners whose DV is not a superset of ours (RESTORE, foreign writers) ------------------


class FakeRowHook:
    """A row hook that knows each file's rows (row index i holds id = i, see Lab.file).

    It evaluates only ``id = n`` / ``id >= n`` predicates: enough to decide which revived
    rows our read predicate selects, independently of the conflict checker.
    """

    def __init__(self, files_match: bool = True) -> None:
        self.asked: list[tuple[Predicate, dict[str, set[int]]]] = []
        self.files_match = files_match

    @staticmethod
    def _holds(predicate: Predicate, row: int) -> bool:
        assert isinstance(predicate, Comparison) and isinstance(predicate.right, Literal)
        bound = predicate.right.value
        assert isinstance(bound, int)
        return row == bound if predicate.op == "=" else row >= bound

    def __call__(self, predicate: Predicate, files: Sequence[AddFile]) -> bool:
        return self.files_match

    def rows_match(self, predicate: Predicate, rows: dict[str, tuple[AddFile, BitMap64]]) -> bool:
        self.asked.append((predicate, {p: set(b) for p, (_, b) in rows.items()}))
        return any(self._holds(predicate, int(r)) for _, bits in rows.values() for r in bits)

    def row_values(
        self, rows: dict[str, tuple[AddFile, BitMap64]], columns: Sequence[str], limit: int
    ) -> list[dict[str, object]]:
        return [
            {"file": p, "row": int(r), "id": int(r)} for p, (_, bits) in rows.items() for r in bits
        ][:limit]


def ge(col: str, value: int) -> Comparison:
    return Comparison(">=", Column(col), Literal(value))


def _shrunk_table(rows: int = 10, deleted: Sequence[int] = (0, 1), **kwargs: object) -> Lab:
    lab, f = _table(rows, **kwargs)
    lab.commit(lab.dv_delete(f, deleted), "DELETE", read=eq("id", 0), read_files=[f])
    return lab


def _foreign_shrink(lab: Lab, keep_deleted: Sequence[int] | None) -> int:
    """A foreign winner replaces f's DV by a smaller one (None: re-adds f without a DV)."""
    from dataclasses import replace

    from txsql.dv import write_deletion_vectors

    live = lab.current("f.parquet")
    dv = None
    if keep_deleted is not None:
        (dv,) = write_deletion_vectors("/mem/t", lab.fs, [BitMap64(keep_deleted)])
    return lab.commit([lab.remove(live), replace(live, deletion_vector=dv)], "RESTORE").version


def _our_delete(lab: Lab, predicate: Predicate, rows: Sequence[int], hook: object) -> Transaction:
    f = lab.current("f.parquet")
    txn = Transaction(lab.log, row_predicate_checker=hook)  # type: ignore[arg-type]
    txn.snapshot()
    txn.record_scan(predicate, [f], {f.path: BitMap64(rows)})
    txn.stage(lab.dv_delete(f, rows))
    return txn


def test_revived_row_outside_our_predicate_rebases_and_stays_alive() -> None:
    lab = _shrunk_table()
    hook = FakeRowHook()
    ours = _our_delete(lab, ge("id", 5), [5, 6, 7, 8, 9], hook)
    _foreign_shrink(lab, [0])  # row 1 comes back
    ours.commit("DELETE")
    assert lab.deleted_rows(lab.current("f.parquet")) == {0, 5, 6, 7, 8, 9}, "row 1 stays"
    assert hook.asked == [(ge("id", 5), {"f.parquet": {1}})], "asked about row 1 only"


def test_revived_row_inside_our_predicate_conflicts_and_names_it() -> None:
    lab = _shrunk_table()
    ours = _our_delete(lab, ge("id", 1), [2, 3, 4, 5, 6, 7, 8, 9], FakeRowHook())
    winner = _foreign_shrink(lab, [0])
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("DELETE")
    err = info.value
    assert err.winning_version == winner
    assert err.rows == {"f.parquet": (1,)}
    assert err.row_details == ({"file": "f.parquet", "row": 1, "id": 1},)
    assert "revived" in err.rule and "partition predicate will not help" in err.hint
    assert "rows f.parquet: 1]" in err.message
    assert lab.deleted_rows(lab.current("f.parquet")) == {0}, "the table is the winner's"


def test_hook_that_cannot_check_rows_makes_revived_rows_conflict() -> None:
    lab = _shrunk_table()
    ours = _our_delete(lab, ge("id", 5), [5, 6, 7, 8, 9], lambda p, files: False)
    _foreign_shrink(lab, [0])
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("DELETE")
    assert "not checked row by row" in info.value.rule


def test_winner_re_adding_the_file_without_a_dv_revives_every_row() -> None:
    lab = _shrunk_table()
    hook = FakeRowHook()
    ours = _our_delete(lab, eq("id", 5), [5], hook)
    _foreign_shrink(lab, None)
    ours.commit("DELETE")
    assert lab.deleted_rows(lab.current("f.parquet")) == {5}
    assert hook.asked == [(eq("id", 5), {"f.parquet": {0, 1}})]


def test_we_removed_the_whole_file_and_the_winner_revived_a_row_we_did_not_match() -> None:
    lab = _shrunk_table(rows=4)
    f = lab.current("f.parquet")
    ours = Transaction(lab.log, row_predicate_checker=FakeRowHook())
    ours.snapshot()
    ours.record_scan(ge("id", 2), [f], {f.path: BitMap64([2, 3])})
    ours.stage([lab.remove(f)])  # rows 2, 3 were the last live ones
    _foreign_shrink(lab, [0])
    result = ours.commit("DELETE")
    assert [a.path for a in result.actions if isinstance(a, AddFile)] == ["f.parquet"]
    assert lab.deleted_rows(lab.current("f.parquet")) == {0, 2, 3}, "row 1 is not lost"


def test_winner_deleting_and_reviving_checks_both_sets() -> None:
    lab = _shrunk_table()
    hook = FakeRowHook()
    # The winner's DV {0, 7}: row 1 revived, row 7 newly deleted.
    clash = _our_delete(lab, eq("id", 7), [7], hook)
    fine = _our_delete(lab, eq("id", 5), [5], hook)
    _foreign_shrink(lab, [0, 7])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        clash.commit("DELETE")
    assert info.value.rows == {"f.parquet": (7,)}
    assert info.value.row_details == ({"file": "f.parquet", "row": 7, "id": 7},)
    assert "no partition predicate" in info.value.hint
    fine.commit("DELETE")
    assert lab.deleted_rows(lab.current("f.parquet")) == {0, 5, 7}


def test_serializable_reader_sees_revived_rows_as_added() -> None:
    lab = _shrunk_table(isolation="Serializable")
    f = lab.current("f.parquet")
    ours = Transaction(lab.log, row_predicate_checker=FakeRowHook())
    ours.snapshot()
    ours.record_scan(eq("id", 1), [f], {f.path: BitMap64()})  # SELECT ... WHERE id = 1: none
    ours.stage([lab.file("other", [100])])
    _foreign_shrink(lab, [0])
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("INSERT")
    assert info.value.rows == {"f.parquet": (1,)}


def test_winner_removing_a_dv_we_never_saw_is_file_level() -> None:
    from dataclasses import replace

    lab = _shrunk_table()
    ours = _our_delete(lab, eq("id", 5), [5], FakeRowHook())
    live = lab.current("f.parquet")
    stale = replace(lab.remove(live), deletion_vector=None)  # claims f had no DV
    lab.commit([stale, replace(live, deletion_vector=None)], "WRITE")
    with pytest.raises((ConcurrentAppendError, ConcurrentDeleteReadError)):
        ours.commit("DELETE")


def test_winner_adding_a_live_path_again_without_removing_it_conflicts() -> None:
    from dataclasses import replace

    lab = _shrunk_table()
    ours = _our_delete(lab, eq("id", 5), [5], FakeRowHook(files_match=False))
    lab.commit([replace(lab.current("f.parquet"), deletion_vector=None)], "WRITE")
    with pytest.raises(ConcurrentDeleteDeleteError) as info:
        ours.commit("DELETE")
    assert "cannot be decided row by row" in info.value.rule


def test_rebased_stats_keep_every_bound_as_written() -> None:
    """The add a rebase writes carries its stats text unchanged plus ``tightBounds``: a
    DECIMAL(38, 18) bound sent through a float would fall below the real maximum."""
    exact = '{"numRecords":2,"maxValues":{"d":12345678901234567890.123456789012345678}}'
    assert loosen_stats(exact) == exact[:-1] + ',"tightBounds":false}'
