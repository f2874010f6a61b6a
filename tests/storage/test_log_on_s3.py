"""The log layer on s3:// (moto), no Spark: commits, DVs, checkpoint, time travel, history.

The oracle is delta-rs (the ``deltalake`` package) reading the same bucket through its own
object_store client: it must see the versions, files and rows txsql wrote.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyroaring import BitMap64

from tests.storage.moto_s3 import MotoS3
from txsql.dv import read_deletion_vector, write_deletion_vectors
from txsql.errors import VersionNotFoundError
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage import FileIO, LocalFileIO
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
DV_PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def _delta_rs_options(moto: MotoS3) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": moto.endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_ALLOW_HTTP": "true",
        "timeout": "10s",
    }


def _data_file(fs: FileIO, root: str, name: str, ids: list[int]) -> AddFile:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), sink)
    fs.write_if_absent(f"{root}/{name}", sink.getvalue())
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)}}
    stats["nullCount"] = {"id": 0}
    return AddFile(name, {}, len(sink.getvalue()), 1, stats=json.dumps(stats))


def _commit(log: DeltaLog, actions: list, operation: str = "WRITE") -> int:
    with Transaction(log) as txn:
        txn.stage(actions)
        return txn.commit(operation).version


def _delta_rs_files(location: str, moto: MotoS3, version: int) -> set[str]:
    """delta-rs's view of ``version``: the names of its live files."""
    table = DeltaTable(location, version=version, storage_options=_delta_rs_options(moto))
    return {uri.rsplit("/", 1)[-1] for uri in table.file_uris()}


def test_log_layer_on_s3(moto_s3: MotoS3, s3_bucket: str, tmp_path: Path) -> None:
    location = f"s3://{s3_bucket}/sales"
    log = DeltaLog.for_path(location, moto_s3.options())
    fs = log.store.fs
    config = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "3"}
    metadata = Metadata(id="s3", schema_string=SCHEMA, configuration=config)
    assert _commit(log, [DV_PROTOCOL, metadata], "CREATE TABLE") == 0
    first = _data_file(fs, location, "part-0.parquet", [1, 2, 3])
    assert _commit(log, [first]) == 1
    assert _commit(log, [_data_file(fs, location, "part-1.parquet", [4, 5])]) == 2

    # A deletion vector written to and read back from the bucket, then committed.
    (dv,) = write_deletion_vectors(location, fs, [BitMap64([1])])
    assert set(read_deletion_vector(dv, location, fs)) == {1}
    # boto3 (another S3 client) finds the object, byte for byte what a local write makes.
    key = dv.absolute_path(location).split(f"{s3_bucket}/", 1)[1]  # type: ignore[union-attr]
    stored = moto_s3.client().get_object(Bucket=s3_bucket, Key=key)["Body"].read()
    (local_dv,) = write_deletion_vectors(str(tmp_path), LocalFileIO(), [BitMap64([1])])
    assert stored == (tmp_path / local_dv.absolute_path(str(tmp_path))).read_bytes()  # type: ignore[operator]
    stats = replace(first, deletion_vector=dv)
    assert _commit(log, [first.to_remove(timestamp=2), stats], "DELETE") == 3
    assert _commit(log, [_data_file(fs, location, "part-2.parquet", [6])]) == 4

    # A fresh reader (no cache) on the same bucket sees everything: the checkpoint at 3
    # with its _last_checkpoint, the .crc files, time travel and history.
    fresh = DeltaLog.for_path(location, moto_s3.options())
    names = {f.name for f in fresh.store.list_log()}
    assert "00000000000000000003.checkpoint.parquet" in names and "_last_checkpoint" in names
    assert "00000000000000000004.crc" in names
    latest = fresh.snapshot()
    assert latest.version == 4
    assert {f.path for f in latest.files} == {"part-0.parquet", "part-1.parquet", "part-2.parquet"}
    assert {f.path for f in fresh.snapshot(2).files} == {"part-0.parquet", "part-1.parquet"}
    history = fresh.history()
    assert [r.version for r in history] == [4, 3, 2, 1, 0]
    operations = [r.commit_info.operation for r in history if r.commit_info]
    assert operations == ["WRITE", "DELETE", "WRITE", "WRITE", "CREATE TABLE"]
    # Timestamps come from S3's Last-Modified (whole seconds), made monotonic.
    assert fresh.snapshot_at_timestamp(history[2].timestamp).version == 2
    assert [a.path for a in fresh.read_commit(1) if isinstance(a, AddFile)] == ["part-0.parquet"]

    # The independent reader agrees on every version.
    assert _delta_rs_files(location, moto_s3, 2) == {"part-0.parquet", "part-1.parquet"}
    assert _delta_rs_files(location, moto_s3, 4) == {
        "part-0.parquet",
        "part-1.parquet",
        "part-2.parquet",
    }
    assert DeltaTable(location, storage_options=_delta_rs_options(moto_s3)).version() == 4


def test_cold_start_from_checkpoint_only(moto_s3: MotoS3, s3_bucket: str) -> None:
    """Log cleanup removed early commits: the reader starts from _last_checkpoint on S3."""
    location = f"s3://{s3_bucket}/t"
    log = DeltaLog.for_path(location, moto_s3.options())
    metadata = Metadata(
        id="c", schema_string=SCHEMA, configuration={"delta.checkpointInterval": "2"}
    )
    _commit(log, [Protocol(1, 2), metadata], "CREATE TABLE")
    for i in range(3):
        _commit(log, [_data_file(log.store.fs, location, f"f{i}.parquet", [i])])
    for version in (0, 1):
        log.store.delete_log_file(f"{version:020d}.json")
    fresh = DeltaLog.for_path(location, moto_s3.options())
    assert fresh.snapshot().version == 3
    assert len(fresh.snapshot().files) == 3
    with pytest.raises(VersionNotFoundError):
        fresh.snapshot(0)
