"""Join reads (MERGE) in the conflict checker, with a scripted join hook (no Spark).

The hook's answers are scripted per file name; the tests check that the checker asks it
about exactly the winner's changed rows and decides from its answer, in row-level and
file-level mode, and that it stays conservative without a hook.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pyroaring import BitMap64

from tests.txn.harness import Lab
from txsql.errors import ConcurrentAppendError, ConcurrentDeleteReadError
from txsql.log.actions import AddFile
from txsql.log.predicates import TRUE, Column, Comparison, Literal
from txsql.txn.join_read import harmless_removes, join_only_paths
from txsql.txn.readset import JoinRead
from txsql.txn.transaction import Transaction


class ScriptedJoin:
    """A join hook: files whose name is in ``joining`` hold a row joining our source."""

    def __init__(self, *joining: str) -> None:
        self.joining = set(joining)
        self.calls: list[list[str]] = []

    def __call__(self, join: JoinRead, files: Sequence[AddFile]) -> bool:
        self.calls.append(sorted(f.path for f in files))
        return any(f.path in self.joining for f in files)


def _merge(
    lab: Lab, files: Sequence[AddFile], hook: ScriptedJoin | None, **kw: object
) -> Transaction:
    """Our upsert MERGE: it read ``files`` through the join and inserts one new file."""
    txn = lab.txn()
    txn.join_checker = hook
    join = JoinRead("t.id = s.id", "t", "s", TRUE, tuple(files), source=object())
    txn.record_join(join, kw.get("matched", {}))  # type: ignore[arg-type]
    txn.stage([lab.file("ours", [100])])
    return txn


def _table(**kwargs: object) -> tuple[Lab, AddFile, AddFile]:
    lab = Lab(**kwargs)  # type: ignore[arg-type]
    a, b = lab.file("a", range(10)), lab.file("b", range(10, 20))
    lab.commit([a, b], blind=True)
    return lab, a, b


@pytest.mark.parametrize("row_level", [True, False])
def test_added_rows_conflict_only_when_they_join(row_level: bool) -> None:
    lab, a, b = _table(row_level=row_level)
    hook = ScriptedJoin("joins.parquet")
    ours = _merge(lab, [a, b], hook)
    lab.commit([lab.file("other", [50])], "MERGE", read=TRUE, read_files=[a])
    assert ours.commit("MERGE").version == 3
    assert hook.calls == [["other.parquet"]]
    ours = _merge(lab, [a, b], hook)
    lab.commit([lab.file("joins", [60])], "MERGE", read=TRUE, read_files=[a])
    with pytest.raises(ConcurrentAppendError) as info:
        ours.commit("MERGE")
    assert "join with our MERGE source" in (info.value.rule or "")


def test_without_a_hook_added_files_conflict() -> None:
    lab, a, b = _table()
    ours = _merge(lab, [a, b], None)
    lab.commit([lab.file("other", [50])], "MERGE", read=TRUE, read_files=[a])
    with pytest.raises(ConcurrentAppendError):
        ours.commit("MERGE")


def test_target_filter_stats_skip_the_hook() -> None:
    lab, a, b = _table()
    hook = ScriptedJoin("other.parquet")
    txn = lab.txn()
    txn.join_checker = hook
    only_low = Comparison("<", Column("id"), Literal(20))
    txn.record_join(JoinRead("t.id = s.id AND t.id < 20", "t", "s", only_low, (a, b), None), {})
    txn.stage([lab.file("ours", [5])])
    lab.commit([lab.file("other", [50, 60])], "MERGE", read=TRUE, read_files=[a])
    assert txn.commit("MERGE").version == 3
    assert hook.calls == [], "stats rule the added file out before any Spark job"


@pytest.mark.parametrize("row_level", [True, False])
def test_removed_file_with_no_matched_row_is_harmless(row_level: bool) -> None:
    """A copy-on-write winner rewrote ``a``; we matched nothing there."""
    lab, a, b = _table(row_level=row_level)
    hook = ScriptedJoin()
    ours = _merge(lab, [a, b], hook, matched={b.path: BitMap64([3])})
    lab.commit([lab.remove(a), lab.file("a2", range(1, 10))], "MERGE", read_files=[a])
    assert ours.commit("MERGE").version == 3
    assert hook.calls == [["a2.parquet"]], "the rewritten rows were joined, the removal not"


def test_removed_file_with_a_matched_row_conflicts() -> None:
    lab, a, b = _table(row_level=False)
    ours = _merge(lab, [a, b], ScriptedJoin(), matched={a.path: BitMap64([3])})
    lab.commit([lab.remove(a), lab.file("a2", range(1, 10))], "MERGE", read_files=[a])
    with pytest.raises(ConcurrentDeleteReadError):
        ours.commit("MERGE")


def test_unknown_matched_rows_ask_the_hook_about_the_file_as_read() -> None:
    """An insert-only MERGE records no rows: a removed file is joined as we read it."""
    lab, a, b = _table(row_level=False)
    hook = ScriptedJoin("b.parquet")
    ours = _merge(lab, [a, b], hook, matched=None)
    lab.commit([lab.remove(a)], "DELETE", read_files=[a])
    assert ours.commit("MERGE").version == 3
    assert hook.calls == [["a.parquet"]]
    ours = _merge(lab, [lab.current("b.parquet")], hook, matched=None)
    lab.commit([lab.remove(lab.current("b.parquet"))], "DELETE", read_files=[b])
    with pytest.raises(ConcurrentDeleteReadError):
        ours.commit("MERGE")


def test_a_scan_of_the_same_file_keeps_the_file_level_rule() -> None:
    lab, a, b = _table(row_level=False)
    txn = lab.txn()
    join = JoinRead("t.id = s.id", "t", "s", TRUE, (a, b), None)
    txn.record_join(join, {})
    assert join_only_paths(txn.read_set) == {"a.parquet", "b.parquet"}
    assert not txn.read_set.is_empty
    txn.record_scan(TRUE, [a])
    removed = {"a.parquet": lab.remove(a), "b.parquet": lab.remove(b)}
    assert harmless_removes(txn.read_set, removed, ScriptedJoin()) == {"b.parquet"}
