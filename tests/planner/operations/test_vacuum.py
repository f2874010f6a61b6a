"""VACUUM (dry run, deletion, retention check) and log cleanup after checkpoints."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import VersionNotFoundError
from txsql.log.deltalog import DeltaLog
from txsql.planner.operations.vacuum import CHECK_CONF, RetentionTooShortError
from txsql.storage.paths import data_file_path

pytestmark = [pytest.mark.spark]

HOUR_AGO = time.time() - 3600
SHORT_RETENTION = (
    "ALTER TABLE t SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 1 second')"
)


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def age(paths: list[str]) -> None:
    for path in paths:
        os.utime(path, (HOUR_AGO, HOUR_AGO))


def all_files(root: str) -> list[str]:
    out = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        out.extend(os.path.join(directory, n) for n in names)
    return out


def build_history(s: txsql.Session) -> tuple[DeltaLog, set[str], set[str]]:
    """A table with removed files, a replaced DV and orphans; (log, live, expected doomed)."""
    s.sql("CREATE TABLE t (id INT, p STRING) PARTITIONED BY (p)")
    s.sql(
        "INSERT INTO t SELECT /*+ COALESCE(1) */ * FROM VALUES (1, 'a'), (2, 'a'), (5, 'a') "
        "AS v(id, p)"
    )
    s.sql("INSERT INTO t VALUES (3, 'b')")
    s.sql("DELETE FROM t WHERE id = 1")  # a DV on the 'a' file
    s.sql("DELETE FROM t WHERE id = 5")  # a new DV replaces it: the old DV file is unused
    s.sql("DELETE FROM t WHERE id = 3")  # removes the 'b' file
    s.sql("INSERT INTO t VALUES (4, 'c')")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    root = log.table_root
    staging = Path(root) / "_txsql_staging" / "dead"
    staging.mkdir(parents=True)
    orphans = [
        str(staging / "part-00000-x.parquet"),
        str(Path(root) / "p=a" / "part-orphan.parquet"),
        str(Path(root) / f"deletion_vector_{uuid.uuid4()}.bin"),
    ]
    for orphan in orphans:
        Path(orphan).write_bytes(b"x")
    snapshot = log.snapshot()
    live = {data_file_path(root, f.path) for f in snapshot.files}
    for f in snapshot.files:
        if f.deletion_vector is not None:
            live.add(os.path.normpath(f.deletion_vector.absolute_path(root) or ""))
    # The whole table, version 0 included, is an hour old: the orphans were written after
    # the table's creation, so VACUUM may prove they are its own.
    age([*all_files(root), log.store.log_path("00000000000000000000.json")])
    doomed = {os.path.normpath(p) for p in all_files(root)} - live
    assert len(doomed) >= 5  # the 'b' file, the old DV file and the orphans
    return log, live, doomed


def test_dry_run_lists_exactly_the_expired_and_orphaned_files(session: txsql.Session) -> None:
    _, live, doomed = build_history(session)
    # Within the default 7-day retention nothing goes: tombstones protect their files and
    # the hour-old orphans are younger than the cutoff (they may be an unfinished write).
    assert session.sql("VACUUM t DRY RUN").df.count() == 0
    session.sql(SHORT_RETENTION)
    time.sleep(1.2)  # the tombstones are now older than the table's retention
    listed = {r["path"] for r in session.sql("VACUUM t DRY RUN").df.collect()}
    assert listed == doomed
    assert all(os.path.exists(p) for p in doomed)  # a dry run deletes nothing
    assert not live & listed


def test_vacuum_deletes_them_and_the_table_stays_readable(session: txsql.Session) -> None:
    log, live, doomed = build_history(session)
    session.sql(SHORT_RETENTION)
    time.sleep(1.2)
    expected = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    version = log.latest_version()
    r = session.sql("VACUUM t")
    assert r.metrics["numDeletedFiles"] == len(doomed)
    assert not any(os.path.exists(p) for p in doomed)
    assert all(os.path.exists(p) for p in live)
    assert not (Path(log.table_root) / "_txsql_staging").exists()
    assert sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect()) == expected
    latest = log.latest_version()
    assert latest == (version or 0) + 2
    assert duckdb_rows(log.table_root, latest, "id, p") == expected
    assert deltalake_rows(log.table_root, latest, "id, p") == expected
    history = {h.version: h.commit_info for h in log.history(2)}
    start, end = history[latest - 1], history[latest]
    assert start is not None and start.operation == "VACUUM START"
    assert (start.operation_metrics or {})["numFilesToDelete"] == str(len(doomed))
    assert end is not None and end.operation == "VACUUM END"
    assert (end.operation_metrics or {})["numDeletedFiles"] == str(len(doomed))
    assert session.sql("VACUUM t DRY RUN").df.count() == 0


def test_retention_check_refuses_short_retain(session: txsql.Session, spark: Any) -> None:
    log, live, _ = build_history(session)
    version = log.latest_version()
    with pytest.raises(RetentionTooShortError, match="retention") as caught:
        session.sql("VACUUM t RETAIN 0 HOURS")
    assert CHECK_CONF in caught.value.hint
    assert log.latest_version() == version
    spark.conf.set(CHECK_CONF, "false")
    try:
        r = session.sql("VACUUM t RETAIN 0 HOURS")
    finally:
        spark.conf.unset(CHECK_CONF)
    assert r.metrics["numDeletedFiles"] >= 5
    assert all(os.path.exists(p) for p in live)
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    assert rows == [(2, "a"), (4, "c")]


def test_log_cleanup_keeps_a_checkpoint_and_everything_after(session: txsql.Session) -> None:
    session.sql(
        "CREATE TABLE t (id INT) TBLPROPERTIES ('delta.checkpointInterval' = '2', "
        "'delta.logRetentionDuration' = 'interval 1 second')"
    )
    session.sql("INSERT INTO t VALUES (1)")
    session.sql("INSERT INTO t VALUES (2)")  # checkpoint 2: nothing expired yet
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    log_dir = Path(log.store.log_dir)
    assert (log_dir / f"{0:020d}.json").exists()
    age([str(p) for p in log_dir.iterdir() if p.name[:20].isdigit()])
    session.sql("INSERT INTO t VALUES (3)")
    session.sql("INSERT INTO t VALUES (4)")  # checkpoint 4: commits before checkpoint 2 go
    names = {p.name for p in log_dir.iterdir()}
    assert f"{0:020d}.json" not in names and f"{1:020d}.json" not in names
    assert f"{2:020d}.json" in names and f"{2:020d}.checkpoint.parquet" in names
    with pytest.raises(VersionNotFoundError):
        session.sql("SELECT * FROM t VERSION AS OF 1").df.collect()
    assert [r[0] for r in session.sql("SELECT * FROM t VERSION AS OF 2").df.collect()] != []
    assert sorted(r[0] for r in session.sql("SELECT * FROM t").df.collect()) == [1, 2, 3, 4]
    assert duckdb_rows(log.table_root, 4, "id") == [(1,), (2,), (3,), (4,)]
    assert deltalake_rows(log.table_root, 3, "id") == [(1,), (2,), (3,)]


def test_vacuum_never_deletes_files_that_predate_the_table(
    session: txsql.Session, tmp_path: Path
) -> None:
    location = str(tmp_path / "ext")
    session.sql(f"CREATE TABLE t LOCATION '{location}' AS SELECT id FROM range(3)")
    log = DeltaLog.for_path(location)
    ctas_files = [data_file_path(location, f.path) for f in log.snapshot().files]
    # Someone else's data copied in later with its old modification time (cp -p).
    foreign = str(Path(location) / "part-00000-foreign.snappy.parquet")
    Path(foreign).write_bytes(b"not ours")
    os.utime(foreign, (HOUR_AGO - 3600, HOUR_AGO - 3600))
    session.sql(SHORT_RETENTION)
    session.sql("DELETE FROM t")  # removes the CTAS files
    orphan = str(Path(location) / "part-00001-failed-write.parquet")
    Path(orphan).write_bytes(b"a failed write after the table was created")
    # The CTAS files are older than version 0 (written before it) but a commit names them.
    age(ctas_files)
    time.sleep(1.2)
    listed = {r["path"] for r in session.sql("VACUUM t DRY RUN").df.collect()}
    assert listed == {os.path.normpath(p) for p in [*ctas_files, orphan]}
    session.sql("VACUUM t")
    assert os.path.exists(foreign)
    assert not any(os.path.exists(p) for p in [*ctas_files, orphan])
