"""VACUUM racing a writer (issue 21, item 3): no row is ever lost.

The reported race: one process loops ``UPDATE c SET n = n + 1 WHERE id = 8``, another
``OPTIMIZE c; VACUUM c RETAIN 0 HOURS`` with the retention check off. An UPDATE then
committed a file VACUUM had just deleted. Here the interleaving is made deterministic: a
hook runs the other session's statements between the UPDATE's write and its commit. The
final rows must equal the serial expectation (``n`` is the number of committed UPDATEs)
and DuckDB must read every version's table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from tests.txn.commit.test_own_files import assert_only_logged_files
from txsql.errors import AddedFileMissingError, CommitConflictError
from txsql.log.actions import AddFile
from txsql.log.deltalog import DeltaLog
from txsql.planner.operations.vacuum import CHECK_CONF
from txsql.storage.paths import data_file_path
from txsql.txn.transaction import Transaction

pytestmark = [pytest.mark.spark]

UPDATE = "UPDATE c SET n = n + 1 WHERE id = 8"


@pytest.fixture()
def sessions(spark: Any, tmp_path: Path) -> Iterator[tuple[txsql.Session, txsql.Session]]:
    writer = txsql.Session(spark, warehouse=str(tmp_path))
    other = txsql.Session(spark, warehouse=str(tmp_path))
    writer.sql(
        "CREATE TABLE c (id INT, n INT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    writer.sql("INSERT INTO c VALUES (8, 0), (9, 0)")
    spark.conf.set(CHECK_CONF, "false")
    try:
        yield writer, other
    finally:
        spark.conf.unset(CHECK_CONF)


def before_commit(
    monkeypatch: pytest.MonkeyPatch, operation: str, action: Callable[[Transaction], None]
) -> list[Transaction]:
    """Run ``action`` between the write and the commit of every ``operation``."""
    real = Transaction.commit
    seen: list[Transaction] = []

    def commit(self: Transaction, op: str, *args: Any, **kwargs: Any) -> Any:
        if op == operation and not any(t is self for t in seen):
            seen.append(self)
            action(self)
        return real(self, op, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)
    return seen


def rows(s: txsql.Session) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql("SELECT id, n FROM c").df.collect())


def root_of(s: txsql.Session) -> str:
    return s.table("c").location


def test_vacuum_between_an_updates_write_and_its_commit_spares_its_file(
    sessions: tuple[txsql.Session, txsql.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, other = sessions
    vacuums: list[txsql.Result] = []
    before_commit(
        monkeypatch, "UPDATE", lambda _: vacuums.append(other.sql("VACUUM c RETAIN 0 HOURS"))
    )
    writer.sql(UPDATE)
    assert vacuums and vacuums[0].metrics["numDeletedFiles"] == 0
    assert rows(writer) == [(8, 1), (9, 0)]
    latest = DeltaLog.for_path(root_of(writer)).latest_version() or 0
    assert duckdb_rows(root_of(writer), latest, "id, n") == [(8, 1), (9, 0)]
    monkeypatch.undo()
    assert writer.sql(UPDATE).version == latest + 1, "later writes still work"
    assert rows(writer) == [(8, 2), (9, 0)]


def test_optimize_and_vacuum_between_updates_never_lose_an_update(
    sessions: tuple[txsql.Session, txsql.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported loop, interleaved at its worst point each time: every UPDATE either
    commits or fails typed, and ``n`` counts exactly the committed ones."""
    writer, other = sessions
    root = root_of(writer)

    def compact_and_vacuum(_: Transaction) -> None:
        other.sql("INSERT INTO c VALUES (100, 0)")  # something for OPTIMIZE to compact
        other.sql("OPTIMIZE c")
        other.sql("VACUUM c RETAIN 0 HOURS")

    committed = 0
    for _ in range(3):
        before_commit(monkeypatch, "UPDATE", compact_and_vacuum)
        try:
            writer.sql(UPDATE)
            committed += 1
        except CommitConflictError:
            # OPTIMIZE removed the file this UPDATE changed and VACUUM deleted it (with its
            # deletion vector) before the UPDATE could be rebased: refused, nothing written.
            pass
        monkeypatch.undo()
        other.sql("VACUUM c RETAIN 0 HOURS")
        expected = [(8, committed), (9, 0), *[(100, 0)] * (_ + 1)]
        assert rows(writer) == expected
        latest = DeltaLog.for_path(root).latest_version() or 0
        assert duckdb_rows(root, latest, "id, n") == expected
    assert committed >= 1, "row-level concurrency rebases an UPDATE onto OPTIMIZE"


@pytest.mark.parametrize("kind", ["data", "dv"])
def test_a_commit_naming_a_deleted_file_fails_typed_and_changes_nothing(
    sessions: tuple[txsql.Session, txsql.Session], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Something deletes a file the UPDATE wrote before it commits: the commit refuses."""
    writer, _ = sessions
    root = root_of(writer)
    log = DeltaLog.for_path(root)
    version = log.latest_version()

    def delete_written_file(txn: Transaction) -> None:
        logged = {f.path for f in log.snapshot().files}
        for action in txn.staged:
            if not isinstance(action, AddFile):
                continue
            if kind == "data" and action.path not in logged:
                os.unlink(data_file_path(root, action.path))
            elif kind == "dv" and action.deletion_vector is not None:
                dv_file = action.deletion_vector.absolute_path(root)
                if dv_file is not None and os.path.exists(dv_file):
                    os.unlink(dv_file)

    before_commit(monkeypatch, "UPDATE", delete_written_file)
    with pytest.raises(AddedFileMissingError, match="UPDATE was not committed") as caught:
        writer.sql(UPDATE)
    assert "Re-run the statement" in caught.value.hint
    assert caught.value.statement == UPDATE, "the error names the statement"
    assert log.latest_version() == version, "nothing committed"
    assert duckdb_rows(root, version or 0, "id, n") == [(8, 0), (9, 0)]
    assert rows(writer) == [(8, 0), (9, 0)]
    assert_only_logged_files(root)  # the files it did write are gone too
    monkeypatch.undo()
    writer.sql(UPDATE)  # re-running it works
    assert rows(writer) == [(8, 1), (9, 0)]
