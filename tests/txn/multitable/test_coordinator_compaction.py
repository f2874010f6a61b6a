"""Compaction of coordinator records (issue 35): old records go, every guarantee stays.

Spark-free: real local tables (the helpers of test_group_commit) and the coordinator's own
files. The oracle is the files on disk and the tables' raw logs, not txsql's view.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.txn.multitable.test_group_commit import (
    ENROLLED,
    add,
    commit_both,
    make_table,
    raw_commit,
    writer,
)
from txsql.errors import ConcurrentAppendError, PreparedTransactionRolledBackError
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE
from txsql.storage.filesystem import LocalFileIO
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable import compaction as compaction_module
from txsql.txn.multitable import coordinator as coordinator_module
from txsql.txn.multitable.compaction import (
    compact_coordinator,
    newest_records,
    retention_ms,
)
from txsql.txn.multitable.coordinator import (
    Coordinator,
    coordinator_at,
    now_ms,
    read_summary,
)
from txsql.txn.multitable.publish import roll_forward
from txsql.txn.prepared.decide import commit_prepared, rollback_prepared
from txsql.txn.prepared.records import PreparedRecord, write_prepared
from txsql.txn.transaction import Transaction, commit_together

LATER = 10**15  # "now" far after every record: with retention 0 all but the newest qualify


def coordinator_dir(warehouse: Path) -> Path:
    return warehouse / "_txsql_coordinator"


def positions(warehouse: Path) -> list[int]:
    names = os.listdir(coordinator_dir(warehouse))
    return sorted(int(n[:20]) for n in names if n[:20].isdigit())


def record_bytes(warehouse: Path) -> int:
    directory = coordinator_dir(warehouse)
    return sum((directory / n).stat().st_size for n in os.listdir(directory) if n[:20].isdigit())


def tables(warehouse: Path) -> tuple[DeltaLog, DeltaLog]:
    return make_table(warehouse, "a", ENROLLED), make_table(warehouse, "b", ENROLLED)


def groups(a: DeltaLog, b: DeltaLog, count: int, tag: str = "g") -> None:
    for i in range(count):
        commit_both(writer(a, f"{tag}a{i}"), writer(b, f"{tag}b{i}"))


def fresh(warehouse: Path) -> Coordinator:
    """The coordinator as a new process sees it (nothing known, nothing cached)."""
    coordinator_at(str(coordinator_dir(warehouse))).forget()
    return Coordinator(str(coordinator_dir(warehouse)), LocalFileIO())


def test_records_below_the_retention_go_and_disk_use_is_bounded(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 40)
    before, newest = record_bytes(tmp_path), positions(tmp_path)[-1]
    coordinator = fresh(tmp_path)
    kept_all = compact_coordinator(coordinator, now_ms(), retention_ms([{}]))
    assert kept_all.deleted == 0, "7 days by default: nothing is old enough yet"
    done = compact_coordinator(coordinator, LATER, 0)
    assert positions(tmp_path) == [newest], "only the newest record stays"
    assert done.deleted == newest and done.summary.compacted == newest
    assert record_bytes(tmp_path) < before / 20
    groups(a, b, 40, "h")  # and it stays bounded: compacting again keeps one record
    compact_coordinator(coordinator, LATER, 0)
    assert positions(tmp_path) == [newest + 40]
    assert read_summary(coordinator).compacted == newest + 40


def test_records_newer_than_the_retention_are_kept(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 5)
    coordinator = fresh(tmp_path)
    cutoff = coordinator.read(3).timestamp  # records from position 3 on are "recent"
    compact_coordinator(coordinator, cutoff + 1000, 1000)
    assert positions(tmp_path)[0] <= 3


@pytest.mark.parametrize("hint", [None, 3, 0])
def test_a_fresh_process_finds_the_newest_and_commits_the_next_group(
    tmp_path: Path, hint: int | None
) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 10)
    newest = positions(tmp_path)[-1]
    compact_coordinator(fresh(tmp_path), LATER, 0)
    hint_file = coordinator_dir(tmp_path) / "latest_position.hint"
    if hint is None:
        hint_file.unlink(missing_ok=True)
    else:  # a hint naming a record compaction deleted
        hint_file.write_text(f'{{"position": {hint}}}')
    assert fresh(tmp_path).latest_position() == newest
    commit_both(writer(a, "next-a"), writer(b, "next-b"))
    assert positions(tmp_path) == [newest, newest + 1]
    assert fresh(tmp_path).latest_position() == newest + 1


def test_a_process_whose_known_position_was_compacted_probes_from_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 3)
    stale = fresh(tmp_path)
    known = stale.latest_position()
    stale.mark_published(known)
    groups(a, b, 10, "h")
    newest = positions(tmp_path)[-1]
    compact_coordinator(fresh(tmp_path), LATER, 0)  # another process deletes `known`
    # ... which it only may once the stale process's view is older than an hour: then.
    monkeypatch.setattr(coordinator_module, "now_ms", lambda: LATER)
    assert stale.latest_position() == newest


def test_roll_forward_of_an_unpublished_newest_record_after_compaction(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 10)
    compact_coordinator(fresh(tmp_path), LATER, 0)
    tb = writer(b, "last")
    commit_both(writer(a, "last-a"), tb)
    version = b.latest_version()
    assert version is not None
    (Path(b.table_root) / "_delta_log" / f"{version:020d}.json").unlink()  # a crash
    coordinator = fresh(tmp_path)
    compact_coordinator(coordinator, LATER, 0)  # compaction rolls forward, keeps the newest
    info = next(x["commitInfo"] for x in raw_commit(b, version) if "commitInfo" in x)
    assert info["txnId"] == tb.txn_id
    assert positions(tmp_path) == [roll_forward(coordinator) - 1]


def test_an_open_prepared_transaction_blocks_its_records_and_later_ones(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 4)
    coordinator = coordinator_at(str(coordinator_dir(tmp_path)))
    decide_from = roll_forward(coordinator)
    write_prepared(coordinator, PreparedRecord("sink-1", decide_from, now_ms(), ()))
    groups(a, b, 6, "h")
    compact_coordinator(coordinator, LATER, 0)
    assert positions(tmp_path)[0] == decide_from, "records from decideFrom on are kept"
    rollback_prepared(coordinator, "sink-1")  # decided: it no longer holds anything back
    groups(a, b, 2, "k")
    compact_coordinator(coordinator, LATER, 0)
    assert len(positions(tmp_path)) == 1
    # Its decision was compacted, yet asking again still finds it (kept/).
    with pytest.raises(PreparedTransactionRolledBackError):
        commit_prepared(fresh(tmp_path), "sink-1", 3)
    rollback_prepared(fresh(tmp_path), "sink-1")  # again: says so, no crash


def test_a_conflict_still_names_a_winner_whose_record_was_compacted(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    ta = Transaction(a, isolation=IsolationLevel.SERIALIZABLE)
    ta.stage([add(a, "fa")])
    tb = writer(b, "fb")
    ta.record_scan(TRUE, [])
    writer(a, "other").commit("WRITE")  # the winner, through the coordinator
    winner_version = a.latest_version()
    assert winner_version is not None
    info = next(x["commitInfo"] for x in raw_commit(a, winner_version) if "commitInfo" in x)
    winner_name = info["tags"]["delta.multiTableTransaction.transactionId"]
    c, d = make_table(tmp_path, "c", ENROLLED), make_table(tmp_path, "d", ENROLLED)
    groups(c, d, 3)
    compact_coordinator(fresh(tmp_path), LATER, 0)
    winner_positions = [p for p in range(positions(tmp_path)[0]) if p >= 0]
    assert winner_positions, "the winner's record is compacted"
    with pytest.raises(ConcurrentAppendError, match=r"^a: ") as caught:
        commit_together([(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))], ["a", "b"])
    assert caught.value.winning_transaction == winner_name


def test_show_transactions_lists_live_records_and_the_summary(tmp_path: Path) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 10)
    coordinator = fresh(tmp_path)
    newest = coordinator.latest_position()
    compact_coordinator(coordinator, LATER, 0)
    groups(a, b, 2, "h")
    shown = newest_records(fresh(tmp_path), 20)
    assert [g.position for g in shown] == [newest + 2, newest + 1, newest]
    assert read_summary(coordinator).compacted == newest


class FailingDeletes(LocalFileIO):
    """Local files whose deletes fail after ``allowed`` of them (a kill mid-compaction)."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed

    def delete(self, path: str) -> None:
        if self.allowed == 0:
            raise KeyboardInterrupt("killed")
        self.allowed -= 1
        super().delete(path)


@pytest.mark.parametrize("allowed", [0, 5])
def test_a_compaction_killed_midway_leaves_a_usable_coordinator(
    tmp_path: Path, allowed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tables(tmp_path)
    groups(a, b, 12)
    newest = positions(tmp_path)[-1]
    dying = Coordinator(str(coordinator_dir(tmp_path)), FailingDeletes(allowed))
    with pytest.raises(KeyboardInterrupt):
        compact_coordinator(dying, LATER, 0)
    assert positions(tmp_path)[0] == allowed, "deleted in ascending order"
    assert fresh(tmp_path).latest_position() == newest
    commit_both(writer(a, "after-a"), writer(b, "after-b"))
    # The killed compaction's lock holds others off until it is stale (15 minutes).
    assert compact_coordinator(fresh(tmp_path), LATER, 0).deleted == 0
    later = now_ms() + compaction_module.LOCK_STALE_MS + 1
    monkeypatch.setattr(compaction_module, "now_ms", lambda: later)
    again = compact_coordinator(fresh(tmp_path), LATER, 0)
    assert positions(tmp_path) == [newest + 1]
    assert again.summary.deleting_from == again.summary.lowest_live == newest + 1
