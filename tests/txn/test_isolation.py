"""Isolation-level choice, blind appends, overlay snapshots, retries and error details."""

from __future__ import annotations

import pytest
from pyroaring import BitMap64

from tests.txn.harness import Lab
from txsql.errors import CommitRetriesExceededError, ConcurrentAppendError, TransactionError
from txsql.log.actions import AddFile, Metadata, RemoveFile
from txsql.log.predicates import Column, Comparison, Literal, LiteralValue
from txsql.txn.isolation import IsolationLevel


def eq(col: str, value: LiteralValue) -> Comparison:
    return Comparison("=", Column(col), Literal(value))


def test_requested_isolation_only_strengthens() -> None:
    lab = Lab(isolation="Serializable")
    txn = lab.txn(IsolationLevel.WRITE_SERIALIZABLE)
    txn.stage([lab.file("a", [1])])
    assert txn.isolation_level is IsolationLevel.SERIALIZABLE
    lab2 = Lab()
    strict = lab2.txn(IsolationLevel.SERIALIZABLE)
    strict.stage([lab2.file("a", [1])])
    assert strict.isolation_level is IsolationLevel.SERIALIZABLE
    assert strict.commit("WRITE").commit_info.isolation_level == "Serializable"


def test_begin_serializable_catches_a_blind_insert_the_table_level_would_allow() -> None:
    lab = Lab()
    f = lab.file("f", range(10))
    lab.commit([f], blind=True)
    strict = lab.txn(IsolationLevel.SERIALIZABLE)
    strict.record_scan(Comparison(">", Column("v"), Literal(5)), [f], {f.path: BitMap64([6])})
    strict.stage(lab.dv_delete(f, [6]))
    lab.commit([lab.file("ins", [8])], blind=True)
    with pytest.raises(ConcurrentAppendError) as info:
        strict.commit("DELETE")
    assert info.value.isolation_level == "Serializable"
    assert "WriteSerializable" in info.value.hint


def test_no_data_change_commits_are_snapshot_isolation() -> None:
    lab = Lab(isolation="Serializable")
    f = lab.file("f", range(3))
    lab.commit([f], blind=True)
    txn = lab.txn()
    txn.record_scan(eq("id", 1), [f])
    txn.stage([lab.remove(f, data_change=False), lab.file("g", range(3), data_change=False)])
    assert txn.commit("OPTIMIZE").commit_info.isolation_level == "SnapshotIsolation"


def test_blind_append_detection() -> None:
    lab = Lab()
    f = lab.file("f", range(3))
    assert lab.commit([f], blind=True).commit_info.is_blind_append is True
    reader = lab.txn()
    reader.record_scan(eq("id", 1), [f])
    reader.stage([lab.file("g", [1])])
    assert reader.commit("WRITE").commit_info.is_blind_append is False
    meta_only = lab.txn()
    meta_only.stage([Metadata("lab", lab.metadata.schema_string, (), {"a": "b"})])
    assert meta_only.commit("SET TBLPROPERTIES").commit_info.is_blind_append is True


def test_commit_info_records_txn_fields() -> None:
    lab = Lab()
    txn = lab.txn()
    txn.stage([lab.file("a", [1])])
    info = txn.commit("WRITE", {"mode": "Append"}, {"numFiles": 1}).commit_info
    assert info.txn_id == txn.txn_id and info.read_version == 0
    assert info.operation_parameters == {"mode": "Append"}
    assert info.operation_metrics == {"numFiles": "1"}


def test_retry_limit_is_enforced() -> None:
    lab = Lab()
    txn = lab.txn(max_attempts=1)
    txn.stage([lab.file("a", [1])])
    lab.commit([lab.file("b", [1])], blind=True)
    with pytest.raises(CommitRetriesExceededError):
        txn.commit("WRITE")


def test_non_conflicting_writer_rebases_past_many_winners() -> None:
    lab = Lab()
    txn = lab.txn()
    txn.stage([lab.file("mine", [1])])
    for i in range(30):
        lab.commit([lab.file(f"w{i}", [i])], blind=True)
    result = txn.commit("WRITE")
    assert result.version == 31 and result.attempts == 2 and len(result.winners) == 30


def test_overlay_snapshot_reads_own_writes_and_nets_out_actions() -> None:
    lab = Lab()
    f = lab.file("f", range(10))
    lab.commit([f], blind=True)
    txn = lab.txn()
    first = lab.dv_delete(f, [1])
    txn.stage([*first, lab.file("new", [20, 21])])
    view = txn.current_snapshot()
    assert view is not None and view.version == 1
    assert {x.path: x.dv_id for x in view.files} == {
        "f.parquet": first[1].dv_id,  # type: ignore[union-attr]
        "new.parquet": None,
    }
    # Statement 2 deletes another row of f (from our staged DV) and the whole new file.
    staged_f = next(x for x in view.files if x.path == "f.parquet")
    second = lab.dv_delete(staged_f, [2])
    new = next(x for x in view.files if x.path == "new.parquet")
    txn.stage([*second, lab.remove(new)])
    staged = txn.staged
    assert [type(a).__name__ for a in staged] == ["RemoveFile", "AddFile"]
    assert isinstance(staged[0], RemoveFile)
    assert staged[0].deletion_vector is None, "net remove is of the logged version"
    final = txn.current_snapshot()
    assert final is not None and [x.path for x in final.files] == ["f.parquet"]
    assert lab.deleted_rows(final.files[0]) == {1, 2}
    assert lab.log.snapshot().version == 1, "nothing committed yet"
    txn.commit("DELETE")
    assert lab.deleted_rows(lab.current("f.parquet")) == {1, 2}


def test_scans_of_our_own_new_files_are_not_read_set_entries() -> None:
    lab = Lab()
    txn = lab.txn()
    mine = lab.file("mine", [1])
    txn.stage([mine])
    txn.record_scan(eq("id", 1), [mine])
    assert txn.read_set.files == set()


def test_one_table_per_transaction() -> None:
    lab = Lab()
    txn = lab.txn()
    txn.require_table("/mem/t/")
    with pytest.raises(TransactionError, match="one table"):
        txn.require_table("/mem/other")


def test_append_conflict_names_partition_and_suggests_a_partition_predicate() -> None:
    lab = Lab(("x",), isolation="Serializable")
    a = lab.file("a", range(3), {"x": "1"})
    lab.commit([a], blind=True)
    txn = lab.txn()
    txn.record_scan(eq("id", 1), [a], {a.path: BitMap64([1])})
    txn.stage(lab.dv_delete(a, [1]))
    won = lab.commit([lab.file("b", range(3), {"x": "1"})], "WRITE", blind=True)
    with pytest.raises(ConcurrentAppendError) as info:
        txn.commit("DELETE")
    err = info.value
    assert err.partitions == ("x=1",)
    assert err.files == ("x=1/b.parquet",)
    assert err.winning_version == won.version and err.winning_operation == "WRITE"
    assert "add a partition predicate such as x = 1" in err.hint.lower()
    assert "x=1" in err.message and f"version {won.version}" in err.message
    assert isinstance(err.rule, str) and err.rule


def test_failed_commit_closes_the_transaction() -> None:
    lab = Lab()
    f = lab.file("f", range(3))
    lab.commit([f], blind=True)
    txn = lab.txn()
    txn.mark_read_whole_table()
    txn.stage([lab.file("g", [1])])
    lab.commit([lab.file("h", [1])], "MERGE")
    with pytest.raises(ConcurrentAppendError):
        txn.commit("MERGE")
    assert txn.state == "failed"
    with pytest.raises(TransactionError):
        txn.commit("MERGE")


def test_adds_are_typed_add_files() -> None:
    lab = Lab()
    txn = lab.txn()
    txn.stage([lab.file("a", [1])])
    assert all(isinstance(a, AddFile) for a in txn.commit("WRITE").actions[1:])
