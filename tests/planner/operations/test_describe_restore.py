"""DESCRIBE DETAIL and RESTORE TABLE."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import VersionNotFoundError
from txsql.log.deltalog import DeltaLog
from txsql.planner.operations.restore import RestoreError

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def rows(s: txsql.Session, sql: str = "SELECT * FROM t") -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in s.sql(sql).df.collect()), key=repr)


def test_describe_detail_values(session: txsql.Session) -> None:
    session.sql(
        "CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p) COMMENT 'demo' "
        "TBLPROPERTIES ('owner' = 'me')"
    )
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    session.sql("DELETE FROM t WHERE id = 3")
    detail = session.sql("DESCRIBE DETAIL t").df.collect()[0].asDict()
    snapshot = DeltaLog.for_path(str(Path(session.warehouse) / "t")).snapshot()
    assert detail["format"] == "delta"
    assert detail["id"] == snapshot.metadata.id
    assert detail["name"] == "t"
    assert detail["description"] == "demo"
    assert detail["location"] == snapshot.table_root
    assert detail["partitionColumns"] == ["p"]
    assert detail["clusteringColumns"] == []
    assert detail["numFiles"] == len(snapshot.files) == 2
    assert detail["sizeInBytes"] == sum(f.size for f in snapshot.files)
    assert detail["properties"] == {"delta.enableDeletionVectors": "true", "owner": "me"}
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (3, 7)
    assert detail["tableFeatures"] == ["deletionVectors"]
    assert detail["statistics"] == {"numRowsDeletedByDeletionVectors": 1, "numDeletionVectors": 1}
    assert isinstance(detail["createdAt"], dt.datetime)
    assert detail["lastModified"] >= detail["createdAt"]


def _history(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id INT, v STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")  # v1
    s.sql("INSERT INTO t VALUES (3, 'c')")  # v2
    s.sql("DELETE FROM t WHERE id = 1")  # v3: a DV on the v1 file
    s.sql("INSERT OVERWRITE t SELECT 9, 'z'")  # v4


def test_restore_to_version_restores_rows_and_metrics(session: txsql.Session) -> None:
    _history(session)
    expected = rows(session, "SELECT * FROM t VERSION AS OF 2")
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    target = log.snapshot(2)
    current = log.snapshot()
    r = session.sql("RESTORE TABLE t TO VERSION AS OF 2")
    assert r.operation == "RESTORE" and r.version == 5
    assert rows(session) == expected == [(1, "a"), (2, "b"), (3, "c")]
    assert r.operation_metrics == {
        "tableSizeAfterRestore": str(sum(f.size for f in target.files)),
        "numOfFilesAfterRestore": str(len(target.files)),
        "numRemovedFiles": str(len(current.files)),
        "numRestoredFiles": str(len(target.files)),
        "removedFilesSize": str(sum(f.size for f in current.files)),
        "restoredFilesSize": str(sum(f.size for f in target.files)),
    }
    assert duckdb_rows(log.table_root, 5, "id, v") == expected
    # Restoring to v3 swaps the v1 file back to its deletion vector.
    session.sql("RESTORE t TO VERSION AS OF 3")
    assert rows(session) == [(2, "b"), (3, "c")]
    assert duckdb_rows(log.table_root, 6, "id, v") == [(2, "b"), (3, "c")]


def test_restore_to_timestamp(session: txsql.Session) -> None:
    _history(session)
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    # Space the commits out so a timestamp falls between versions 2 and 3.
    base = time.time() - 1000
    for v in range(5):
        path = os.path.join(log.store.log_dir, f"{v:020d}.json")
        os.utime(path, (base + 100 * v, base + 100 * v))
    when = dt.datetime.fromtimestamp(base + 250, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    session.sql(f"RESTORE TABLE t TO TIMESTAMP AS OF '{when}'")
    assert rows(session) == [(1, "a"), (2, "b"), (3, "c")]
    with pytest.raises(VersionNotFoundError):
        session.sql("RESTORE TABLE t TO TIMESTAMP AS OF '2000-01-01 00:00:00'")


def test_restore_fails_clearly_when_files_were_vacuumed(session: txsql.Session) -> None:
    _history(session)
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    gone = log.snapshot(2).files[0].path
    os.unlink(os.path.join(log.table_root, gone))
    with pytest.raises(RestoreError, match="deleted"):
        session.sql("RESTORE TABLE t TO VERSION AS OF 2")
    assert log.latest_version() == 4
    with pytest.raises(VersionNotFoundError):
        session.sql("RESTORE TABLE t TO VERSION AS OF 7")
