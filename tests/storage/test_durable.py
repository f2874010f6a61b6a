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
    add = AddFile("missing.parquet", {}, 1, 0, stats=json.dumps({"pad": "x" * padding}))
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
    expected: type[Exception],
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
    import json, resource, sys
    from txsql.errors import DiskFullError
    from txsql.log.deltalog import DeltaLog
    from txsql.log.actions import AddFile
    from txsql.txn.transaction import Transaction

    log = DeltaLog.for_path(sys.argv[1])
    log.snapshot()
    add = AddFile("missing.parquet", {}, 1, 0, stats=json.dumps({"pad": "x" * 200_000}))
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
    try:
        with Transaction(log) as txn:
            txn.stage([add])
            result = txn.commit("WRITE", {"mode": "Append"})
    except DiskFullError as exc:
        print("DiskFullError", exc.message)
    else:
        print("committed", result.version)
    """
)


def test_file_size_limit_fails_the_commit_in_a_real_process(tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_table(root)
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
    assert done.stdout.startswith("DiskFullError"), done.stdout + done.stderr
    visible, hidden = visible_and_hidden(str(root / "_delta_log"))
    assert visible == [commit_name(0), commit_name(1)] and hidden == []
    assert DeltaLog.for_path(str(root)).snapshot().version == 1
    assert duckdb_rows(str(root), 1, "id") == [(0,), (1,), (2,)]


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
