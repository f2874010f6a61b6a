"""A transaction's own files: checked before its commit, deleted when never committed.

The oracle for "nothing left behind" shares no code with txsql: the test reads the JSON
commits itself (add, remove and cdc paths, deletion-vector file names from their Z85
UUIDs) and checks deltalake's ``file_uris()`` too; rows are read with DuckDB.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyroaring import BitMap64

import txsql
from tests.interop.readers import duckdb_rows
from txsql.dv.store import write_deletion_vectors
from txsql.errors import (
    AddedFileMissingError,
    AppendOnlyTableError,
    CheckConstraintViolationError,
    CommitConflictError,
    CommitRetriesExceededError,
    StorageWriteError,
    TransactionAbortedError,
)
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.written import record_written, recording
from txsql.txn.transaction import Transaction

# --- the oracle: what the log names, read straight from the JSON commits -----------------

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _dv_file(dv: dict[str, Any]) -> str | None:
    """The relative name of a 'u' deletion vector's file (protocol: Z85 UUID + prefix)."""
    if dv["storageType"] != "u":
        return None
    text = dv["pathOrInlineDv"]
    prefix, encoded = text[:-20], text[-20:]
    raw = b""
    for i in range(0, 20, 5):
        value = 0
        for char in encoded[i : i + 5]:
            value = value * 85 + _Z85.index(char)
        raw += value.to_bytes(4, "big")
    name = f"deletion_vector_{uuid.UUID(bytes=raw)}.bin"
    return f"{prefix}/{name}" if prefix else name


def files_the_log_names(root: str) -> set[str]:
    """Every file any commit of the table names (data, DV, change data), relative."""
    named: set[str] = set()
    log_dir = Path(root) / "_delta_log"
    for commit in sorted(log_dir.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            for kind in ("add", "remove", "cdc"):
                body = action.get(kind)
                if body is None:
                    continue
                named.add(unquote(body["path"]))
                dv = body.get("deletionVector")
                if dv and _dv_file(dv):
                    named.add(str(_dv_file(dv)))
    return named


def files_on_disk(root: str) -> set[str]:
    out = set()
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in names:
            out.add(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return out


def assert_only_logged_files(root: str) -> None:
    """The table directory holds exactly the files its log names, no orphan."""
    on_disk = files_on_disk(root)
    assert on_disk == files_the_log_names(root), "orphans: " + str(
        sorted(on_disk - files_the_log_names(root))
    )
    live = {unquote(u).split(root.rstrip("/") + "/", 1)[1] for u in DeltaTable(root).file_uris()}
    assert live <= on_disk


# --- through SQL: ROLLBACK, refused statements, lost races --------------------------------

ROWS = [(1, "a"), (2, "a"), (3, "b")]


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    session.sql(
        "CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p) TBLPROPERTIES "
        "('delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true')"
    )
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b')")
    return session


def _unchanged(s: txsql.Session, version: int, expected: list[tuple[Any, ...]] = ROWS) -> None:
    root = s.table("t").location
    assert s.table("t").version() == version
    assert duckdb_rows(root, version, "id, p") == sorted(expected)
    assert_only_logged_files(root)


@pytest.mark.spark
def test_rollback_deletes_every_file_the_transaction_wrote(s: txsql.Session) -> None:
    version = s.table("t").version()
    s.run_script(
        "BEGIN; INSERT INTO t VALUES (4, 'a'), (5, 'c'); UPDATE t SET id = id + 10 WHERE id = 2;"
        " DELETE FROM t WHERE id = 3; MERGE INTO t USING (SELECT 1 AS id) src ON t.id = src.id"
        " WHEN MATCHED THEN DELETE"
    )
    assert len(files_on_disk(s.table("t").location)) > len(
        files_the_log_names(s.table("t").location)
    )
    s.sql("ROLLBACK")
    _unchanged(s, version)


@pytest.mark.spark
def test_a_statement_refused_inside_begin_deletes_the_transactions_files(
    s: txsql.Session,
) -> None:
    s.sql("ALTER TABLE t ADD CONSTRAINT positive CHECK (id > 0)")
    version = s.table("t").version()
    s.sql("BEGIN")
    s.sql("INSERT INTO t VALUES (4, 'a')")
    s.sql("DELETE FROM t WHERE id = 1")
    with pytest.raises(CheckConstraintViolationError):
        s.sql("UPDATE t SET id = -id WHERE id = 2")
    _unchanged(s, version)  # void now: its files are gone before the ROLLBACK
    with pytest.raises(TransactionAbortedError):
        s.sql("COMMIT")
    s.sql("ROLLBACK")
    _unchanged(s, version)


@pytest.mark.spark
@pytest.mark.parametrize(
    "statement", ["DELETE FROM t WHERE id = 1", "UPDATE t SET id = 7 WHERE id = 2"]
)
def test_a_statement_refused_at_commit_deletes_its_files(s: txsql.Session, statement: str) -> None:
    """Append-only is checked when the statement commits, after its DV and data files."""
    s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    version = s.table("t").version()
    with pytest.raises(AppendOnlyTableError):
        s.sql(statement)
    _unchanged(s, version)


def _before_commit(
    monkeypatch: pytest.MonkeyPatch, operation: str, action: Callable[[], object]
) -> None:
    real = Transaction.commit
    done: list[bool] = []

    def commit(self: Transaction, op: str, *args: Any, **kwargs: Any) -> Any:
        if op == operation and not done:
            done.append(True)
            action()
        return real(self, op, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)


@pytest.mark.spark
def test_exhausted_retries_delete_the_statements_files(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    impatient = txsql.Session(spark, warehouse=s.warehouse, max_commit_attempts=1)
    _before_commit(monkeypatch, "WRITE", lambda: s.sql("INSERT INTO t VALUES (6, 'b')"))
    with pytest.raises(CommitRetriesExceededError):
        impatient.sql("INSERT INTO t VALUES (5, 'c')")
    _unchanged(s, s.table("t").version(), [*ROWS, (6, "b")])


@pytest.mark.spark
def test_a_conflict_deletes_the_statements_files(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    _before_commit(monkeypatch, "UPDATE", lambda: s.sql("DELETE FROM t WHERE id = 2"))
    with pytest.raises(CommitConflictError):
        s.sql("UPDATE t SET id = 20 WHERE id = 2")
    _unchanged(s, s.table("t").version(), [(1, "a"), (3, "b")])


# --- the transaction layer: what is deleted and what never is ----------------------------

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


@pytest.fixture()
def log(tmp_path: Path) -> DeltaLog:
    log = DeltaLog.for_path(str(tmp_path / "t"))
    with Transaction(log) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="o", schema_string=SCHEMA)])
        txn.commit("CREATE TABLE")
    return log


def _write(log: DeltaLog, txn: Transaction | None, name: str) -> AddFile:
    """A data file written like a statement writes it: recorded in ``txn``'s ledger."""
    path = os.path.join(log.table_root, name)
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), path)
    if txn is not None:
        with recording(txn.written):
            record_written(path)
    return AddFile(name, {}, os.path.getsize(path), 0, stats='{"numRecords":1}')


def _exists(log: DeltaLog, name: str) -> bool:
    return os.path.exists(os.path.join(log.table_root, name))


def test_commit_refuses_an_added_file_that_is_gone(log: DeltaLog) -> None:
    txn = Transaction(log)
    txn.snapshot()
    kept = _write(log, txn, "kept.parquet")
    gone = _write(log, txn, "gone.parquet")
    os.unlink(os.path.join(log.table_root, "gone.parquet"))
    txn.stage([kept, gone])
    with pytest.raises(AddedFileMissingError, match=r"MY WRITE was not committed: 1 file.*gone"):
        txn.commit("MY WRITE")
    assert log.latest_version() == 0
    assert not _exists(log, "kept.parquet"), "certainly not committed: its files go"


def test_commit_refuses_a_deletion_vector_file_that_is_gone(log: DeltaLog) -> None:
    base = _write(log, None, "base.parquet")
    with Transaction(log) as txn:
        txn.stage([base])
        txn.commit("WRITE")
    (dv,) = write_deletion_vectors(log.table_root, LocalFileIO(), [BitMap64([0])])
    os.unlink(str(dv.absolute_path(log.table_root)))
    txn = Transaction(log)
    txn.snapshot()
    txn.stage([base.to_remove(), AddFile(base.path, {}, base.size, 0, deletion_vector=dv)])
    with pytest.raises(AddedFileMissingError, match="deletion_vector_"):
        txn.commit("DELETE")
    assert log.latest_version() == 1


def test_rollback_deletes_only_the_files_the_transaction_recorded(log: DeltaLog) -> None:
    txn = Transaction(log)
    txn.snapshot()
    mine = _write(log, txn, "mine.parquet")
    _write(log, None, "someone-elses.parquet")  # e.g. RESTORE re-adding an existing file
    txn.stage([mine])
    txn.rollback()
    assert not _exists(log, "mine.parquet")
    assert _exists(log, "someone-elses.parquet")


def test_a_recorded_file_some_commit_names_is_never_deleted(log: DeltaLog) -> None:
    """Even a wrongly attributed file survives: every commit since the read is checked."""
    loser = Transaction(log)
    loser.snapshot()
    shared = _write(log, loser, "shared.parquet")
    with Transaction(log) as winner:
        winner.stage([shared])
        winner.commit("WRITE")
    loser.abort()
    assert _exists(log, "shared.parquet")


def test_commit_deletes_the_recorded_files_it_does_not_name(log: DeltaLog) -> None:
    txn = Transaction(log)
    txn.snapshot()
    named = _write(log, txn, "named.parquet")
    cancelled = _write(log, txn, "cancelled.parquet")
    txn.stage([named, cancelled])
    txn.stage([cancelled.to_remove()])  # a later statement removed it: never committed
    txn.commit("WRITE")
    assert _exists(log, "named.parquet") and not _exists(log, "cancelled.parquet")


def test_a_commit_that_may_have_landed_deletes_nothing(
    log: DeltaLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error during the put leaves it unknown whether the commit exists: keep files."""
    real = log.store.write_if_absent

    def write_then_fail(version: int, data: bytes) -> None:
        real(version, data)
        raise StorageWriteError("the connection dropped after the write")

    monkeypatch.setattr(log.store, "write_if_absent", write_then_fail)
    txn = Transaction(log)
    txn.snapshot()
    txn.stage([_write(log, txn, "maybe.parquet")])
    with pytest.raises(StorageWriteError):
        txn.commit("WRITE")
    assert log.latest_version() == 1, "it did land"
    assert _exists(log, "maybe.parquet")


def test_a_recorded_directory_is_emptied_when_nothing_was_committed() -> None:
    """Object stores: Spark writes straight into a fresh directory, recorded before the job
    starts, so a failed job's partial files are found by listing it."""
    from txsql.storage import LogStore, MemoryFileIO
    from txsql.storage.written import record_written_directory

    fs = MemoryFileIO()
    log = DeltaLog(LogStore("/mem/t", fs))
    with Transaction(log) as create:
        create.stage([Protocol(1, 2), Metadata(id="o", schema_string=SCHEMA)])
        create.commit("CREATE TABLE")
    fs.write("/mem/t/abc/part-00000.parquet", b"x")  # someone else's, not recorded
    txn = Transaction(log)
    txn.snapshot()
    with recording(txn.written):
        record_written_directory("/mem/t/f00d")
    for name in ("part-00000.parquet", "p=1/part-00001.parquet"):
        fs.write(f"/mem/t/f00d/{name}", b"x")
    txn.rollback()
    assert [s.name for s in fs.list_tree("/mem/t") if not s.name.startswith("_delta_log")] == [
        "abc/part-00000.parquet"
    ]
