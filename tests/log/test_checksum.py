"""Version checksum files (``.crc``): what we write, what we accept, what we refuse."""

from __future__ import annotations

import json

import pytest

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import ChecksumMismatchError, ChecksumUnreadableWarning, CorruptLogError
from txsql.log import checksum
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.segment import find_segment, list_log
from txsql.storage import LogStore, MemoryFileIO
from txsql.txn.transaction import Transaction

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
DV = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


PLAIN = Protocol(1, 2)


def _table(fs: MemoryFileIO | None = None, protocol: Protocol = PLAIN) -> DeltaLog:
    fs = fs or MemoryFileIO()
    for name in ("a.parquet", "b.parquet"):  # a commit checks that its files exist
        fs.write(f"/t/{name}", b"")
    log = DeltaLog(LogStore("/t", fs))
    txn = Transaction(log)
    txn.stage([protocol, Metadata("m", SCHEMA), AddFile("a.parquet", {}, 100, 0)])
    txn.commit("CREATE TABLE")
    txn = Transaction(log)
    txn.snapshot()
    dv = DeletionVectorDescriptor("i", "wi5:1", 10, 3, None) if protocol is DV else None
    txn.stage([AddFile("b.parquet", {}, 23, 0, deletion_vector=dv)])
    txn.commit("WRITE")
    return log


def test_commit_writes_a_checksum_with_exact_counts() -> None:
    log = _table()
    body = json.loads(log.store.read_log_file(checksum.checksum_name(1)))
    assert (body["tableSizeBytes"], body["numFiles"]) == (123, 2)
    assert (body["numMetadata"], body["numProtocol"]) == (1, 1)
    assert body["metadata"]["id"] == "m" and body["metadata"]["schemaString"] == SCHEMA
    assert body["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert "numDeletionVectorsOpt" not in body  # only for tables with deletion vectors
    assert list_log(log.store).checksums == frozenset({0, 1})


def test_deletion_vector_counts_are_written_for_dv_tables() -> None:
    body = json.loads(_table(protocol=DV).store.read_log_file(checksum.checksum_name(1)))
    assert (body["numDeletionVectorsOpt"], body["numDeletedRecordsOpt"]) == (1, 3)


def test_spark_style_checksum_with_extra_fields_verifies() -> None:
    log = _table()
    name = checksum.checksum_name(1)
    body = json.loads(log.store.read_log_file(name))
    body.update(
        txnId="x",
        histogramOpt={"sortedBinBoundaries": [0], "fileCounts": [2], "totalBytes": [123]},
        setTransactions=[],
        allFiles=None,
    )
    body["protocol"]["readerFeatures"] = None
    log.store.write_log_file(name, json.dumps(body).encode())
    assert DeltaLog(log.store).snapshot().version == 1


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("numFiles", 3, "numFiles: checksum 3, log 2"),
        ("tableSizeBytes", 1, "tableSizeBytes: checksum 1, log 123"),
        ("protocol", {"minReaderVersion": 2, "minWriterVersion": 5}, "protocol"),
        ("metadata", {"id": "other", "schemaString": SCHEMA}, "metadata.id"),
    ],
)
def test_each_difference_is_named(field: str, value: object, named: str) -> None:
    log = _table()
    name = checksum.checksum_name(1)
    body = json.loads(log.store.read_log_file(name))
    body[field] = value
    log.store.write_log_file(name, json.dumps(body).encode())
    with pytest.raises(ChecksumMismatchError, match="version 1") as info:
        DeltaLog(log.store).snapshot()
    assert named in info.value.message


def test_cached_refresh_also_verifies() -> None:
    log = DeltaLog(_table().store)
    log.snapshot(0)  # cache version 0, then damage the checksum of version 1
    name = checksum.checksum_name(1)
    body = json.loads(log.store.read_log_file(name))
    body["numFiles"] = 7
    log.store.write_log_file(name, json.dumps(body).encode())
    with pytest.raises(ChecksumMismatchError):
        log.snapshot()


def test_unreadable_checksum_warns_and_skips_the_check() -> None:
    log = _table()
    log.store.write_log_file(checksum.checksum_name(1), b'{"numFiles": ')
    with pytest.warns(ChecksumUnreadableWarning, match="00000000000000000001.crc"):
        assert DeltaLog(log.store).snapshot().version == 1


class _NoChecksumWrites(MemoryFileIO):
    def write(self, path: str, data: bytes) -> None:
        if path.endswith(".crc"):
            raise OSError(28, "No space left on device")
        super().write(path, data)


def test_failed_checksum_write_never_fails_the_commit() -> None:
    log = _table(_NoChecksumWrites())
    assert log.snapshot().version == 1
    assert list_log(log.store).checksums == frozenset()


def test_checksum_of_a_lost_newest_commit_is_corruption() -> None:
    log = _table()
    log.store.delete_log_file("00000000000000000001.json")
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.crc exists"):
        find_segment(log.store)


def test_in_commit_timestamp_is_recorded_when_enabled() -> None:
    log = DeltaLog(LogStore("/t", MemoryFileIO()))
    txn = Transaction(log)
    conf = {"delta.enableInCommitTimestamps": "true"}
    txn.stage(
        [Protocol(3, 7, (), ("inCommitTimestamp",)), Metadata("m", SCHEMA, configuration=conf)]
    )
    result = txn.commit("CREATE TABLE")
    body = json.loads(log.store.read_log_file(checksum.checksum_name(0)))
    assert result.commit_info.in_commit_timestamp is not None
    assert body["inCommitTimestampOpt"] == result.commit_info.in_commit_timestamp
