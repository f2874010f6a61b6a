"""Group commits through the coordinator on local disk, without Spark (issue 20).

Tables are real local ``_delta_log`` directories with empty placeholder data files (the
transaction layer never reads data files). The oracle for "what landed" is the raw log
and coordinator files read as JSON here, not txsql's replay.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from txsql.errors import ConcurrentAppendError, CorruptLogError, TransactionError
from txsql.log import features, protocol_upgrade
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable import group_commit
from txsql.txn.multitable.coordinator import coordinator_at
from txsql.txn.multitable.publish import roll_forward
from txsql.txn.transaction import Transaction, commit_together

ENROLLED = {features.MULTI_TABLE_PROPERTY: "true"}
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


def make_table(
    warehouse: Path, name: str, conf: dict[str, str] | None = None, table_id: str = ""
) -> DeltaLog:
    root = warehouse / name
    log = DeltaLog.for_path(str(root))
    table_id = table_id or f"id-{name}"
    metadata = Metadata(id=table_id, schema_string=SCHEMA, configuration=conf or {})
    protocol = protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata)
    with Transaction(log) as txn:
        txn.stage([protocol, metadata])
        txn.commit("CREATE TABLE")
    return log


def add(log: DeltaLog, name: str) -> AddFile:
    path = Path(log.table_root) / f"{name}.parquet"
    path.write_bytes(b"")
    stats = json.dumps({"numRecords": 1, "minValues": {"id": 1}, "maxValues": {"id": 1}})
    return AddFile(f"{name}.parquet", {}, 10, 1, data_change=True, stats=stats)


def raw_commit(log: DeltaLog, version: int) -> list[dict[str, Any]]:
    text = (Path(log.table_root) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def records(warehouse: Path) -> list[dict[str, Any]]:
    directory = warehouse / "_txsql_coordinator"
    names = (
        sorted(n for n in os.listdir(directory) if n.endswith(".json"))
        if directory.exists()
        else []
    )
    return [json.loads((directory / n).read_text()) for n in names]


def writer(log: DeltaLog, name: str, files: int = 1) -> Transaction:
    txn = Transaction(log)
    txn.stage([add(log, f"{name}-{i}" if files > 1 else name) for i in range(files)])
    return txn


def commit_both(ta: Transaction, tb: Transaction) -> list[int]:
    results = commit_together(
        [(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))], ["a", "b"]
    )
    return [r.version for r in results]


def staged_files(log: DeltaLog) -> list[str]:
    directory = Path(log.table_root) / "_delta_log" / "_staged_commits"
    return sorted(os.listdir(directory)) if directory.exists() else []


@pytest.fixture(params=["inline", "staged"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Commits ride inline in the coordinator record (small ones do), or are written as
    staged commit files first (large ones are)."""
    if request.param == "staged":
        monkeypatch.setattr(group_commit, "INLINE_MAX_BYTES", 0)
    return str(request.param)


def test_enrolled_table_lists_a_writer_only_feature(tmp_path: Path) -> None:
    log = make_table(tmp_path, "a", ENROLLED)
    protocol = next(a["protocol"] for a in raw_commit(log, 0) if "protocol" in a)
    assert isinstance(protocol, dict)
    assert protocol["minWriterVersion"] == 7
    assert features.MULTI_TABLE_FEATURE in protocol["writerFeatures"]
    assert protocol["minReaderVersion"] == 1  # every reader still reads


def test_two_tables_commit_through_one_record(tmp_path: Path, form: str) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    assert commit_both(writer(a, "fa"), writer(b, "fb")) == [1, 1]
    (record,) = records(tmp_path)
    participants = record["participants"]
    assert isinstance(participants, list)
    assert [p["version"] for p in participants] == [1, 1]
    group = record["transactionId"]
    for log, participant in zip((a, b), participants, strict=True):
        info = next(a["commitInfo"] for a in raw_commit(log, 1) if "commitInfo" in a)
        assert isinstance(info, dict)
        assert info["tags"] == {"delta.multiTableTransaction.transactionId": group}
        published = (Path(log.table_root) / "_delta_log" / f"{1:020d}.json").read_text()
        if form == "inline":  # the record holds the very bytes that were published
            assert participant["inlineCommit"] == published
            assert "stagedCommit" not in participant
        else:
            assert participant["stagedCommit"].startswith("_staged_commits/")
            assert "inlineCommit" not in participant
        # No staged commit is left: published ones are cleaned up, inline ones never exist.
        assert staged_files(log) == []


def test_a_large_commit_is_staged_and_a_small_one_rides_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    monkeypatch.setattr(group_commit, "INLINE_MAX_BYTES", 2000)  # one add fits, 20 do not
    assert commit_both(writer(a, "one"), writer(b, "many", files=20)) == [1, 1]
    (record,) = records(tmp_path)
    small, large = record["participants"]
    assert "inlineCommit" in small and "stagedCommit" not in small
    assert "stagedCommit" in large and "inlineCommit" not in large
    adds = [x for x in raw_commit(b, 1) if "add" in x]
    assert len(adds) == 20 and len([x for x in raw_commit(a, 1) if "add" in x]) == 1
    assert staged_files(a) == staged_files(b) == []


def test_single_table_commit_to_an_enrolled_table_goes_through_the_coordinator(
    tmp_path: Path,
) -> None:
    a = make_table(tmp_path, "a", ENROLLED)
    writer(a, "f1").commit("WRITE")
    writer(a, "f2").commit("WRITE")
    assert [[p["version"] for p in r["participants"]] for r in records(tmp_path)] == [[1], [2]]


def test_plain_tables_never_touch_the_coordinator(tmp_path: Path) -> None:
    a = make_table(tmp_path, "a")
    writer(a, "f1").commit("WRITE")
    assert not (tmp_path / "_txsql_coordinator").exists()


def test_a_version_taken_meanwhile_is_rechecked_and_restaged(tmp_path: Path, form: str) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    ta, tb = writer(a, "fa"), writer(b, "fb")
    ta.snapshot(), tb.snapshot()
    writer(a, "other").commit("WRITE")  # takes a's version 1 first: a blind append
    results = commit_together(
        [(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))], ["a", "b"]
    )
    assert [r.version for r in results] == [2, 1]
    assert results[0].winners == (1,)


def test_a_conflict_names_the_table_and_nothing_lands(tmp_path: Path, form: str) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    ta = Transaction(a, isolation=IsolationLevel.SERIALIZABLE)
    ta.stage([add(a, "fa")])
    tb = writer(b, "fb")
    ta.record_scan(TRUE, [])  # read the whole (empty) table: a concurrent append conflicts
    writer(a, "other").commit("WRITE")
    with pytest.raises(ConcurrentAppendError, match=r"^a: ") as caught:
        commit_together([(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))], ["a", "b"])
    assert b.latest_version() == 0
    (winner,) = records(tmp_path)  # only the winner's record
    assert caught.value.winning_transaction == winner["transactionId"]
    assert staged_files(a) == staged_files(b) == []


def test_roll_forward_publishes_a_ratified_record(tmp_path: Path, form: str) -> None:
    a, b = make_table(tmp_path, "a", ENROLLED), make_table(tmp_path, "b", ENROLLED)
    tb = writer(b, "fb")
    commit_both(writer(a, "fa"), tb)
    # Simulate a crash after ratification: unpublish b's version 1 (its staged file, when
    # it has one, is what a crashed writer would have left).
    participant = records(tmp_path)[0]["participants"][1]
    log_dir = Path(b.table_root) / "_delta_log"
    published = log_dir / f"{1:020d}.json"
    if form == "staged":
        staged = log_dir / participant["stagedCommit"]
        staged.parent.mkdir(exist_ok=True)
        os.replace(published, staged)
    else:
        published.unlink()
    coordinator = coordinator_at(str(tmp_path / "_txsql_coordinator"))
    coordinator.forget()  # a fresh process knows nothing
    assert roll_forward(coordinator) == 1
    info = next(a["commitInfo"] for a in raw_commit(b, 1) if "commitInfo" in a)
    assert info["txnId"] == tb.txn_id


def test_a_commit_behind_the_coordinators_back_is_reported(tmp_path: Path) -> None:
    a = make_table(tmp_path, "a", ENROLLED)
    writer(a, "f1").commit("WRITE")
    log_dir = Path(a.table_root) / "_delta_log"
    forged = [json.dumps({"commitInfo": {"txnId": "someone-else"}})]
    (log_dir / f"{1:020d}.json").write_text("\n".join(forged) + "\n")
    coordinator = coordinator_at(str(tmp_path / "_txsql_coordinator"))
    coordinator.forget()
    with pytest.raises(CorruptLogError, match="bypassed the coordinator"):
        roll_forward(coordinator)


def test_tables_of_different_coordinators_are_refused(tmp_path: Path) -> None:
    a = make_table(tmp_path / "w1", "a", ENROLLED)
    b = make_table(tmp_path / "w2", "b", ENROLLED)
    ta, tb = writer(a, "fa"), writer(b, "fb")
    with pytest.raises(TransactionError, match="different coordinators"):
        commit_together([(ta, ta.commit_loop("WRITE")), (tb, tb.commit_loop("WRITE"))], ["a", "b"])
    assert a.latest_version() == 0 and b.latest_version() == 0


def test_roll_forward_never_publishes_into_a_table_created_again(tmp_path: Path, form: str) -> None:
    import shutil

    a = make_table(tmp_path, "a", ENROLLED)
    writer(a, "f1").commit("WRITE")  # the coordinator's newest record: a's version 1
    shutil.rmtree(a.table_root)  # DROP TABLE, then CREATE at the same place (version 0)
    recreated = make_table(tmp_path, "a", ENROLLED, table_id="id-a-again")
    coordinator = coordinator_at(str(tmp_path / "_txsql_coordinator"))
    coordinator.forget()  # a fresh process rolls the newest record forward
    assert roll_forward(coordinator) == 1
    assert recreated.latest_version() == 0  # the old table's commit stays out


def test_roll_forward_skips_a_table_dropped_after_its_group(tmp_path: Path) -> None:
    import shutil

    a = make_table(tmp_path, "a", ENROLLED)
    writer(a, "f1").commit("WRITE")
    shutil.rmtree(a.table_root)  # DROP TABLE removed the table with its log
    coordinator = coordinator_at(str(tmp_path / "_txsql_coordinator"))
    coordinator.forget()  # a fresh process knows nothing
    assert roll_forward(coordinator) == 1  # nothing to publish, and no error
    recreated = make_table(tmp_path, "a", ENROLLED)  # a new table at the same place
    writer(recreated, "f1").commit("WRITE")
    coordinator.forget()
    writer(recreated, "f2").commit("WRITE")
    assert recreated.latest_version() == 2
