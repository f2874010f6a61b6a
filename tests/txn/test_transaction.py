from __future__ import annotations

import json

import pytest

from txsql.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    MetadataChangedError,
    ProtocolChangedError,
    TransactionError,
    VersionExistsError,
)
from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from txsql.log.codec import decode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage import LogStore, MemoryFileIO
from txsql.txn.isolation import IsolationLevel
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def _metadata(**conf: str) -> Metadata:
    return Metadata(
        id="m", schema_string=SCHEMA, configuration={"delta.enableDeletionVectors": "true", **conf}
    )


def _add(log: DeltaLog, name: str) -> AddFile:
    """An add of ``name``, with an empty placeholder file: a commit checks it exists."""
    log.store.fs.write(f"{log.table_root}/{name}", b"")
    return AddFile(name, {}, 10, 1, stats='{"numRecords":1}')


@pytest.fixture()
def log() -> DeltaLog:
    log = DeltaLog(LogStore("/mem/t", MemoryFileIO()))
    with Transaction(log) as txn:
        txn.stage([PROTOCOL, _metadata()])
        txn.commit("CREATE TABLE")
    return log


def _commit_info(log: DeltaLog, version: int) -> CommitInfo:
    actions = decode_commit(log.store.read_commit(version))
    assert isinstance(actions[0], CommitInfo), "commitInfo is the first line"
    return actions[0]


def test_create_writes_version_zero_with_delta_commit_info(log: DeltaLog) -> None:
    info = _commit_info(log, 0)
    assert info.operation == "CREATE TABLE"
    assert info.read_version is None
    assert info.engine_info and info.engine_info.startswith("txsql/")
    assert info.txn_id and info.isolation_level == "WriteSerializable"
    assert info.is_blind_append is True
    assert log.snapshot().protocol == PROTOCOL


def test_racing_blind_appends_both_commit_in_order(log: DeltaLog) -> None:
    first, second = Transaction(log), Transaction(log)
    first.snapshot(), second.snapshot()
    first.stage([_add(log, "a.parquet")])
    second.stage([_add(log, "b.parquet")])
    assert first.commit("WRITE").version == 1
    result = second.commit("WRITE")
    assert (result.version, result.read_version, result.attempts) == (2, 0, 2)
    assert {f.path for f in log.snapshot().files} == {"a.parquet", "b.parquet"}


@pytest.mark.parametrize(
    ("level", "conflicts"),
    [(IsolationLevel.SERIALIZABLE, True), (IsolationLevel.WRITE_SERIALIZABLE, False)],
)
def test_reader_vs_blind_append_depends_on_isolation(
    log: DeltaLog, level: IsolationLevel, conflicts: bool
) -> None:
    reader = Transaction(log, isolation=level)
    reader.snapshot()
    reader.mark_read_whole_table()
    reader.stage([_add(log, "mine.parquet")])
    with Transaction(log) as appender:
        appender.stage([_add(log, "theirs.parquet")])
        appender.commit("WRITE")
    if conflicts:
        with pytest.raises(ConcurrentAppendError) as info:
            reader.commit("WRITE")
        assert info.value.winning_version == 1
        assert info.value.winning_operation == "WRITE"
        assert log.latest_version() == 1, "the loser wrote nothing"
    else:
        assert reader.commit("WRITE").version == 2


def test_concurrent_create_conflicts_on_protocol() -> None:
    store = LogStore("/mem/t", MemoryFileIO())
    a, b = Transaction(DeltaLog(store)), Transaction(DeltaLog(store))
    a.snapshot(), b.snapshot()
    a.stage([PROTOCOL, _metadata()])
    b.stage([PROTOCOL, _metadata()])
    a.commit("CREATE TABLE")
    with pytest.raises(ProtocolChangedError):
        b.commit("CREATE TABLE")


def test_winner_metadata_change_conflicts(log: DeltaLog) -> None:
    writer = Transaction(log)
    writer.snapshot()
    writer.stage([_add(log, "x.parquet")])
    with Transaction(log) as alter:
        alter.stage([_metadata(foo="bar")])
        alter.commit("SET TBLPROPERTIES")
    with pytest.raises(MetadataChangedError):
        writer.commit("WRITE")


def test_deleting_a_file_we_read_conflicts(log: DeltaLog) -> None:
    with Transaction(log) as t:
        t.stage([_add(log, "a.parquet")])
        t.commit("WRITE")
    reader = Transaction(log)
    reader.snapshot()
    reader.mark_files_read(["a.parquet"])
    reader.stage([_add(log, "c.parquet")])
    with Transaction(log) as deleter:
        deleter.snapshot()
        deleter.mark_files_read(["a.parquet"])
        deleter.stage([RemoveFile("a.parquet", deletion_timestamp=5)])
        deleter.commit("DELETE")
    with pytest.raises(ConcurrentDeleteReadError) as info:
        reader.commit("WRITE")
    assert info.value.files == ("a.parquet",)


def test_lost_response_is_recognised_as_committed(log: DeltaLog) -> None:
    store = log.store
    real_write = store.write_if_absent

    def write_then_lose_response(version: int, data: bytes) -> None:
        real_write(version, data)
        raise VersionExistsError(version)

    store.write_if_absent = write_then_lose_response  # type: ignore[method-assign]
    txn = Transaction(log)
    txn.stage([_add(log, "a.parquet")])
    result = txn.commit("WRITE")
    store.write_if_absent = real_write  # type: ignore[method-assign]
    assert result.version == 1
    assert log.latest_version() == 1, "no duplicate commit"


def test_uncommitted_transaction_leaves_no_trace(log: DeltaLog) -> None:
    with Transaction(log) as txn:
        txn.stage([_add(log, "a.parquet")])
    assert log.latest_version() == 0
    with pytest.raises(TransactionError):
        txn.commit("WRITE")


def test_checkpoint_written_every_interval(log: DeltaLog) -> None:
    for i in range(10):
        with Transaction(log) as t:
            t.stage([_add(log, f"f{i}.parquet")])
            t.commit("WRITE")
    names = [f.name for f in log.store.list_log()]
    assert "00000000000000000010.checkpoint.parquet" in names
    assert "_last_checkpoint" in names
    assert len(DeltaLog(log.store).snapshot().files) == 10


def test_in_commit_timestamps_are_monotonic() -> None:
    log = DeltaLog(LogStore("/mem/ict", MemoryFileIO()))
    conf = {"delta.enableInCommitTimestamps": "true"}
    with Transaction(log) as t:
        t.stage(
            [
                Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "inCommitTimestamp")),
                _metadata(**conf),
            ]
        )
        t.commit("CREATE TABLE")
    stamps: list[int] = []
    for i in range(3):
        with Transaction(log) as t:
            t.stage([_add(log, f"{i}.parquet")])
            t.commit("WRITE")
        stamp = _commit_info(log, i + 1).in_commit_timestamp
        assert stamp is not None
        stamps.append(stamp)
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


# --- read-only validation (Serializable across tables) and aborted transactions ---------


def test_validate_reads_checks_winners_since_the_pinned_version() -> None:
    from tests.txn.harness import Lab
    from txsql.log.predicates import Column, Comparison, Literal
    from txsql.txn.commit.read_validation import validate_reads

    lab = Lab(("x",), row_level=False)
    one = lab.file("one", range(3), {"x": "1"})
    lab.commit([one], blind=True)
    reader = lab.txn()
    reader.record_scan(Comparison("=", Column("x"), Literal(1)), [one])
    assert validate_reads(reader) == 0, "nothing committed since the pin"
    lab.commit([lab.file("two", range(3), {"x": "2"})], blind=True)
    assert validate_reads(reader, "t") == 1, "an append to another partition is no conflict"
    lab.commit([lab.file("more", range(3), {"x": "1"})], blind=True)
    with pytest.raises(ConcurrentAppendError, match="table t, read by this Serializable") as e:
        validate_reads(reader, "t")
    assert e.value.winning_version == lab.log.latest_version()
    assert "read validation of t" in e.value.rule
    assert reader.staged == (), "a read-only view stages nothing"


def test_validate_reads_catches_a_removed_read_file() -> None:
    from tests.txn.harness import Lab
    from txsql.txn.commit.read_validation import validate_reads

    lab = Lab()
    one = lab.file("one", range(3))
    lab.commit([one], blind=True)
    reader = lab.txn()
    reader.mark_files_read([one.path])
    lab.commit([lab.remove(one)], "DELETE")
    with pytest.raises(ConcurrentDeleteReadError):
        validate_reads(reader)


def test_aborted_transaction_refuses_commit(log: DeltaLog) -> None:
    txn = Transaction(log)
    txn.stage([_add(log, "a.parquet")])
    txn.abort()
    assert txn.state == "aborted" and txn.staged == ()
    with pytest.raises(TransactionError, match="already aborted"):
        txn.commit("WRITE")
    txn.rollback()
    assert txn.state == "rolled back"
