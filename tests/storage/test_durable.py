"""Writes either complete durably or fail with a typed error and leave nothing behind."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.interop.readers import duckdb_rows
from tests.storage.faults import (
    WriteFault,
    failing_fsync,
    inject_write,
    record_fsyncs,
    visible_and_hidden,
)
from txsql.errors import DiskFullError, StorageWriteError
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.checkpoint import write_checkpoint
from txsql.log.deltalog import DeltaLog
from txsql.storage import LocalFileIO, LogStore
from txsql.storage.paths import LAST_CHECKPOINT, checkpoint_name, commit_name
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)


def make_table(root: Path, rows: int = 3, conf: dict[str, str] | None = None) -> DeltaLog:
    """Version 0 creates the table, version 1 appends one file with ``rows`` ids."""
    root.mkdir(parents=True, exist_ok=True)
    log = DeltaLog.for_path(str(root))
    with Transaction(log) as txn:
        txn.stage(
            [Protocol(1, 2), Metadata(id="d", schema_string=SCHEMA, configuration=conf or {})]
        )
        txn.commit("CREATE TABLE")
    append(log, root, "part-0.parquet", list(range(rows)))
    return log


def append(log: DeltaLog, root: Path, name: str, ids: list[int]) -> int:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / name)
    add = AddFile(name, {}, (root / name).stat().st_size, 0, stats=f'{{"numRecords":{len(ids)}}}')
    with Transaction(log) as txn:
        txn.stage([add])
        return txn.commit("WRITE", {"mode": "Append"}).version


def big_append(log: DeltaLog, padding: int) -> None:
    """A commit whose JSON is larger than ``padding`` bytes (stats of a file never read)."""
    open(os.path.join(log.table_root, "never-read.parquet"), "ab").close()  # must exist
    add = AddFile("never-read.parquet", {}, 1, 0, stats=json.dumps({"pad": "x" * padding}))
    with Transaction(log) as txn:
        txn.stage([add])
        txn.commit("WRITE", {"mode": "Append"})


def test_short_writes_are_continued_to_the_last_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LogStore(str(tmp_path / "t"), LocalFileIO())
    data = b"".join(b'{"n":%d}\n' % i for i in range(2000))
    fault = inject_write(monkeypatch, WriteFault(r"\.json\.", chunk=7))
    store.write_if_absent(0, data)
    assert store.read_commit(0) == data
    assert sum(fault.written.values()) == len(data), "every byte went through the fake"


@pytest.mark.parametrize(
    ("err", "zero", "expected"),
    [
        (errno.ENOSPC, False, DiskFullError),
        (errno.EFBIG, False, DiskFullError),
        (errno.EIO, False, StorageWriteError),
        (errno.ENOSPC, True, DiskFullError),  # write() returning 0: no progress
    ],
)
def test_failed_commit_reports_no_version_and_leaves_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    err: int,
    zero: bool,
    expected: type[StorageWriteError],
) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    inject_write(monkeypatch, WriteFault(r"\.json\.", budget=20_000, err=err, zero=zero))
    with pytest.raises(expected) as info:
        big_append(log, 50_000)
    assert "How to fix" in str(info.value) and "unchanged" in info.value.hint
    monkeypatch.undo()
    visible, hidden = visible_and_hidden(str(root / "_delta_log"))
    assert commit_name(2) not in visible
    assert hidden == [], "the temp file is removed"
    assert DeltaLog.for_path(str(root)).snapshot().version == 1
    assert append(log, root, "part-1.parquet", [7]) == 2, "the next writer takes version 2"


def test_failing_fsync_fails_the_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    monkeypatch.setattr(os, "fsync", failing_fsync(r"\.json\."))
    with pytest.raises(StorageWriteError):
        big_append(log, 10)
    monkeypatch.undo()
    assert visible_and_hidden(str(root / "_delta_log")) == (
        [commit_name(0), commit_name(1)],
        [],
    )


def test_commit_fsyncs_file_then_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    synced = record_fsyncs(monkeypatch)
    big_append(log, 10)
    log_dir = str(root / "_delta_log")
    file_syncs = [i for i, p in enumerate(synced) if ".00000000000000000002.json." in p]
    dir_syncs = [i for i, p in enumerate(synced) if p == log_dir]
    assert file_syncs and dir_syncs and file_syncs[0] < dir_syncs[-1]


def test_first_commit_makes_new_directories_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = record_fsyncs(monkeypatch)
    LogStore(str(tmp_path / "a" / "t"), LocalFileIO()).write_if_absent(0, b"{}\n")
    # the new table folder's entry in its parent, and _delta_log's entry in the table folder
    assert str(tmp_path) in synced and str(tmp_path / "a" / "t") in synced


def test_checkpoint_write_failure_leaves_no_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    snapshot = log.snapshot()
    inject_write(monkeypatch, WriteFault(r"checkpoint\.parquet\.", budget=100))
    with pytest.raises(DiskFullError):
        write_checkpoint(log.store, snapshot)
    monkeypatch.undo()
    assert visible_and_hidden(str(root / "_delta_log")) == (
        [commit_name(0), commit_name(1)],
        [],
    )


def test_last_checkpoint_failure_keeps_the_previous_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    write_checkpoint(log.store, log.snapshot())
    before = (root / "_delta_log" / LAST_CHECKPOINT).read_bytes()
    append(log, root, "part-1.parquet", [9])
    inject_write(monkeypatch, WriteFault(r"_last_checkpoint\.", budget=5))
    with pytest.raises(DiskFullError):
        write_checkpoint(log.store, log.snapshot())
    monkeypatch.undo()
    assert (root / "_delta_log" / LAST_CHECKPOINT).read_bytes() == before
    assert DeltaLog.for_path(str(root)).snapshot().num_records == 4


@pytest.mark.parametrize("target", [r"checkpoint\.parquet\.", r"_last_checkpoint\."])
def test_failed_checkpoint_never_fails_the_commit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    target: str,
) -> None:
    root = tmp_path / "t"
    log = make_table(root, conf={"delta.checkpointInterval": "2"})
    inject_write(monkeypatch, WriteFault(target, budget=3))
    with caplog.at_level(logging.WARNING):
        version = append(log, root, "part-1.parquet", [5, 6])
    monkeypatch.undo()
    assert version == 2, "the statement reports its version"
    assert any("checkpoint at version 2 failed" in r.getMessage() for r in caplog.records)
    _, hidden = visible_and_hidden(str(root / "_delta_log"))
    assert hidden == []
    fresh = DeltaLog.for_path(str(root)).snapshot()
    assert fresh.version == 2 and fresh.num_records == 5
    assert duckdb_rows(str(root), 2, "id") == [(i,) for i in (0, 1, 2, 5, 6)]


_RLIMIT_CHILD = textwrap.dedent(
    """
    import json, logging, resource, sys
    from pyroaring import BitMap64
    from txsql.dv.store import write_deletion_vectors
    from txsql.errors import DiskFullError
    from txsql.log.actions import AddFile
    from txsql.log.deltalog import DeltaLog
    from txsql.storage.filesystem import LocalFileIO
    from txsql.txn.transaction import Transaction

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    root = sys.argv[1]
    log = DeltaLog.for_path(root)
    log.snapshot()
    open(root + "/never-read.parquet", "ab").close()  # a commit checks its files exist

    def commit(padding):
        stats = json.dumps({"pad": "x" * padding})
        with Transaction(log) as txn:
            txn.stage([AddFile("never-read.parquet", {}, 1, 0, stats=stats)])
            return txn.commit("WRITE", {"mode": "Append"}).version

    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
    outcome = {}
    try:
        outcome["big commit"] = commit(200_000)
    except DiskFullError as exc:
        outcome["big commit"] = type(exc).__name__
    try:
        write_deletion_vectors(root, LocalFileIO(), [BitMap64(range(0, 400_000, 3))])
        outcome["dv"] = "written"
    except DiskFullError as exc:
        outcome["dv"] = type(exc).__name__
    # the checkpoint of this version holds version 2's large stats: it cannot be written
    outcome["small commit"] = commit(0)
    print(json.dumps(outcome))
    """
)


def test_file_size_limit_in_a_real_process(tmp_path: Path) -> None:
    """A real RLIMIT_FSIZE: commit and DV file fail typed; a failed checkpoint is a warning."""
    root = tmp_path / "t"
    log = make_table(root, conf={"delta.checkpointInterval": "3"})
    pq.write_table(pa.table({"id": pa.array([10, 11], pa.int64())}), root / "big-stats.parquet")
    noise = os.urandom(40_000).hex()  # incompressible, so the checkpoint stays large
    stats = json.dumps({"numRecords": 2, "tags": noise})
    size = (root / "big-stats.parquet").stat().st_size
    with Transaction(log) as txn:
        txn.stage([AddFile("big-stats.parquet", {}, size, 0, stats=stats)])
        assert txn.commit("WRITE").version == 2
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _RLIMIT_CHILD, str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome == {"big commit": "DiskFullError", "dv": "DiskFullError", "small commit": 3}
    assert "checkpoint at version 3 failed" in done.stderr
    visible, hidden = visible_and_hidden(str(root / "_delta_log"))
    assert visible == [commit_name(v) for v in range(4)] and hidden == []
    assert not [n for n in os.listdir(root) if "deletion_vector" in n]
    commit_3 = (root / "_delta_log" / commit_name(3)).read_text()
    assert '"never-read.parquet"' in commit_3
    # the small commit's add names a file that does not exist: drop it to read the rows
    with Transaction(log) as txn:
        txn.stage(
            [next(f for f in log.snapshot().files if f.path == "never-read.parquet").to_remove()]
        )
        txn.commit("DELETE")
    assert duckdb_rows(str(root), 4, "id") == [(0,), (1,), (2,), (10,), (11,)]
    assert DeltaLog.for_path(str(root)).snapshot().num_records == 5


def test_checkpoint_name_is_only_published_complete(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    write_checkpoint(log.store, log.snapshot())
    written = pq.read_table(root / "_delta_log" / checkpoint_name(1))
    assert written.num_rows >= 3  # protocol, metadata, one add


def test_spark_disk_full_becomes_a_typed_error() -> None:
    from txsql.engine.write import _disk_full

    error = RuntimeError("Job aborted.\njava.io.IOException: No space left on device")
    typed = _disk_full(error, "/t/_txsql_staging/x")
    assert isinstance(typed, DiskFullError) and "No space left on device" in typed.message
    assert _disk_full(RuntimeError("AnalysisException: no such column"), "/t") is None
