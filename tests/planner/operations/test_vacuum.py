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
from txsql.storage.paths import ROW_ORDER_DIR, data_file_path

pytestmark = [pytest.mark.spark]

DAY = 24 * 3600
# Older than the staging window (a day): VACUUM may delete files no commit names.
LONG_AGO = time.time() - 2 * DAY
SHORT_RETENTION = (
    "ALTER TABLE t SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 1 second')"
)


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark, warehouse=str(tmp_path))


def age(paths: list[str], when: float = LONG_AGO) -> None:
    for path in paths:
        os.utime(path, (when, when))


def all_files(root: str) -> list[str]:
    out: list[str] = []
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
    # A sorting compaction's row order (hidden, ``_``-prefixed): VACUUM never touches it.
    order = Path(root) / ROW_ORDER_DIR / "old.bin"
    order.parent.mkdir()
    order.write_bytes(b"x")
    snapshot = log.snapshot()
    live = {data_file_path(root, f.path) for f in snapshot.files}
    for f in snapshot.files:
        if f.deletion_vector is not None:
            live.add(os.path.normpath(f.deletion_vector.absolute_path(root) or ""))
    # The whole table, version 0 included, is two days old: the orphans were written after
    # the table's creation, so VACUUM may prove they are its own.
    age([*all_files(root), log.store.log_path("00000000000000000000.json"), str(staging)])
    doomed = {os.path.normpath(p) for p in all_files(root)} - live - {str(order)}
    assert len(doomed) >= 5  # the 'b' file, the old DV file and the orphans
    return log, live, doomed


def test_dry_run_lists_exactly_the_expired_and_orphaned_files(session: txsql.Session) -> None:
    _, live, doomed = build_history(session)
    # Within the default 7-day retention tombstones protect their files and the two-day-old
    # orphans are younger than the cutoff; a dead writer's staging folder (older than the
    # staging window) holds no version's files and goes.
    (staged,) = [p for p in doomed if "_txsql_staging" in p]
    assert {r["path"] for r in session.sql("VACUUM t DRY RUN").df.collect()} == {staged}
    session.sql(SHORT_RETENTION)
    assert not os.path.exists(staged), "every commit removes dead staging folders"
    doomed.remove(staged)
    time.sleep(1.2)  # the tombstones are now older than the table's retention
    listed = {r["path"] for r in session.sql("VACUUM t DRY RUN").df.collect()}
    assert listed == doomed
    assert all(os.path.exists(p) for p in doomed)  # a dry run deletes nothing
    assert not live & listed


def test_vacuum_deletes_them_and_the_table_stays_readable(session: txsql.Session) -> None:
    log, live, doomed = build_history(session)
    session.sql(SHORT_RETENTION)
    doomed = {p for p in doomed if "_txsql_staging" not in p}  # that commit removed them
    time.sleep(1.2)
    expected = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    version = log.latest_version()
    r = session.sql("VACUUM t")
    assert r.metrics["numDeletedFiles"] == len(doomed)
    assert not any(os.path.exists(p) for p in doomed)
    assert all(os.path.exists(p) for p in live)
    assert not (Path(log.table_root) / "_txsql_staging").exists()
    assert (Path(log.table_root) / ROW_ORDER_DIR / "old.bin").exists()
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
    # The 'b' file, the old DV file and two orphans; the dead staging folder went with the
    # VACUUM START commit (every commit removes those).
    assert r.metrics["numDeletedFiles"] >= 4
    assert not (Path(log.table_root) / "_txsql_staging").exists()
    assert (Path(log.table_root) / ROW_ORDER_DIR / "old.bin").exists()
    assert all(os.path.exists(p) for p in live)
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    assert rows == [(2, "a"), (4, "c")]


# Every commit path runs the same post-commit hooks: autocommit and an explicit COMMIT.
@pytest.mark.parametrize(
    "last_write", ["INSERT INTO t VALUES (4)", "BEGIN; INSERT INTO t VALUES (4); COMMIT"]
)
def test_log_cleanup_keeps_a_checkpoint_and_everything_after(
    session: txsql.Session, last_write: str
) -> None:
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
    session.sql(last_write)  # checkpoint 4: commits before checkpoint 2 go
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
    session.sql(SHORT_RETENTION)
    session.sql("DELETE FROM t")  # removes the CTAS files
    orphan = str(Path(location) / "part-00001-failed-write.parquet")
    Path(orphan).write_bytes(b"a killed write after the table was created")
    # The table was created three days ago; the orphan is two days old (past the staging
    # window); the foreign file four. The CTAS files are older than version 0 (written
    # before it) but a commit names them.
    created = time.time() - 3 * DAY
    age([log.store.log_path("00000000000000000000.json")], created)
    age([foreign], created - DAY)
    age([orphan])
    age(ctas_files, created - 60)
    time.sleep(1.2)
    listed = {r["path"] for r in session.sql("VACUUM t DRY RUN").df.collect()}
    assert listed == {os.path.normpath(p) for p in [*ctas_files, orphan]}
    session.sql("VACUUM t")
    assert os.path.exists(foreign)
    assert not any(os.path.exists(p) for p in [*ctas_files, orphan])


def test_retain_0_hours_spares_files_no_commit_names_yet(
    session: txsql.Session, spark: Any
) -> None:
    """A file written but not committed yet survives VACUUM RETAIN 0 HOURS; an old one goes.

    RETAIN keeps its meaning for files the log removed: a tombstone is expired at once.
    """
    session.sql("CREATE TABLE t (id INT)")
    session.sql("INSERT INTO t VALUES (1)")
    session.sql("INSERT INTO t VALUES (2)")
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    root = log.table_root
    age([*all_files(root), log.store.log_path("00000000000000000000.json")], LONG_AGO - DAY)
    before = {data_file_path(root, f.path) for f in log.snapshot().files}
    session.sql("DELETE FROM t WHERE id = 1")  # removes a whole file: a tombstone of now
    (removed,) = before - {data_file_path(root, f.path) for f in log.snapshot().files}
    fresh = os.path.join(root, "part-00000-being-committed.c000.snappy.parquet")
    old = os.path.join(root, "part-00001-killed-two-days-ago.c000.snappy.parquet")
    for path in (fresh, old):
        Path(path).write_bytes(b"PAR1")
    age([old])
    spark.conf.set(CHECK_CONF, "false")
    try:
        listed = {r["path"] for r in session.sql("VACUUM t RETAIN 0 HOURS DRY RUN").df.collect()}
        assert listed == {os.path.normpath(removed), os.path.normpath(old)}
        r = session.sql("VACUUM t RETAIN 0 HOURS")
    finally:
        spark.conf.unset(CHECK_CONF)
    assert r.metrics["numDeletedFiles"] == 2
    assert os.path.exists(fresh), "a file no commit names may be a running statement's"
    assert not os.path.exists(old) and not os.path.exists(removed)
    expected = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    assert duckdb_rows(root, log.latest_version() or 0, "id") == expected


def test_a_live_writers_staging_folder_is_never_entered(session: txsql.Session, spark: Any) -> None:
    """A staging folder goes whole once its newest file is older than the staging window,
    never file by file: a running Spark job's early part files may be days old."""
    session.sql("CREATE TABLE t (id INT)")
    log = DeltaLog.for_path(str(Path(session.warehouse) / "t"))
    root = Path(log.table_root)
    age([log.store.log_path("00000000000000000000.json")], LONG_AGO - DAY)
    live = root / "_txsql_staging" / ("1" * 32) / "_temporary" / "0"
    dead = root / "_txsql_staging" / ("2" * 32) / "_temporary" / "0"
    for folder in (live, dead):
        folder.mkdir(parents=True)
        (folder / "part-00000.parquet").write_bytes(b"PAR1")
    (live / "part-00001.parquet").write_bytes(b"PAR1")  # being written now
    age([str(live / "part-00000.parquet"), str(dead / "part-00000.parquet")])
    age([str(dead), str(dead.parent), str(dead.parent.parent)])  # folders too: nothing new
    spark.conf.set(CHECK_CONF, "false")
    try:
        listed = {r["path"] for r in session.sql("VACUUM t RETAIN 0 HOURS DRY RUN").df.collect()}
        assert listed == {str(dead / "part-00000.parquet")}
        session.sql("VACUUM t RETAIN 0 HOURS")
    finally:
        spark.conf.unset(CHECK_CONF)
    assert (live / "part-00000.parquet").exists() and (live / "part-00001.parquet").exists()
    assert not (root / "_txsql_staging" / ("2" * 32)).exists()


def test_vacuum_spares_the_files_of_a_prepared_transaction(
    session: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prepared transaction is durable: VACUUM RETAIN 0 HOURS with the staging window
    at 0 still keeps its data and DV files, and COMMIT PREPARED then commits its rows."""
    s = session
    s.sql("CREATE TABLE t (id INT) TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')")
    s.sql("INSERT INTO t VALUES (1), (2)")
    s.sql("BEGIN; INSERT INTO t VALUES (3); DELETE FROM t WHERE id = 1; PREPARE TRANSACTION 'p'")
    log = DeltaLog.for_path(str(Path(s.warehouse) / "t"))
    root = log.table_root
    committed = {data_file_path(root, f.path) for f in log.snapshot().files}
    prepared = {os.path.normpath(p) for p in all_files(root)} - committed
    assert len(prepared) == 2  # the new row's data file and the DV file
    orphan = os.path.join(root, "part-00009-orphan.c000.snappy.parquet")
    Path(orphan).write_bytes(b"PAR1")
    monkeypatch.setenv("TXSQL_STAGING_WINDOW_MS", "0")
    age([*all_files(root), log.store.log_path("00000000000000000000.json")])
    spark.conf.set(CHECK_CONF, "false")
    try:
        s.sql("VACUUM t RETAIN 0 HOURS")
    finally:
        spark.conf.unset(CHECK_CONF)
    assert not os.path.exists(orphan), "an unnamed file of nobody's is still deleted"
    assert all(os.path.exists(p) for p in prepared)
    s.commit_prepared("p")
    version = log.latest_version() or 0
    assert deltalake_rows(root, version, "id") == [(2,), (3,)]
    assert duckdb_rows(root, version, "id") == [(2,), (3,)]
