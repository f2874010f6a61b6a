"""The ledger of files a transaction wrote, and the existence check before a commit."""

from __future__ import annotations

from pathlib import Path

from txsql.storage.filesystem import LocalFileIO, MemoryFileIO
from txsql.storage.written import (
    WrittenFiles,
    missing_files,
    record_written,
    record_written_directory,
    recording,
)


def test_records_go_to_the_current_ledger_and_nowhere_without_one() -> None:
    outer, inner = WrittenFiles(), WrittenFiles()
    record_written("/t/nobody.parquet")  # no ledger: nothing to attribute it to
    with recording(outer):
        record_written("/t/a.parquet")
        with recording(inner):
            record_written("/t/b.parquet")
            record_written_directory("/t/f00d")
        record_written("/t/c.parquet")  # the outer ledger is current again
    assert outer.take(close=False).files == {"/t/a.parquet", "/t/c.parquet"}
    taken = inner.take(close=False)
    assert taken.files == {"/t/b.parquet"} and taken.directories == {"/t/f00d"}


def test_a_taken_and_closed_ledger_records_nothing_more() -> None:
    ledger = WrittenFiles()
    with recording(ledger):
        record_written("/t/a.parquet")
        assert ledger.take(close=True).files == {"/t/a.parquet"}
        record_written("/t/late.parquet")  # the transaction is over: not its file
    assert ledger.closed and not ledger.take(close=True)


def test_missing_files_on_local_and_in_memory_file_systems(tmp_path: Path) -> None:
    (tmp_path / "here.parquet").write_bytes(b"x")
    paths = [str(tmp_path / "here.parquet"), str(tmp_path / "gone.parquet")]
    assert missing_files(LocalFileIO(), [*paths, paths[1]]) == [paths[1]]
    fs = MemoryFileIO()
    fs.write("/m/here", b"")
    assert missing_files(fs, ["/m/here", "/m/gone"]) == ["/m/gone"]
    assert missing_files(fs, []) == []
