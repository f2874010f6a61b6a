"""Exactly-once writes through the public API: Session.sql, Table.append, foreachBatch."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SqlError, TransactionError

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE sink (batch INT, value STRING)")
    return session


def _files(root: str) -> set[str]:
    """Every file under the table root but the log: what a write would leave behind."""
    found: set[str] = set()
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found.update(os.path.join(directory, n) for n in names)
    return found


def _batches(s: txsql.Session) -> dict[int, int]:
    rows = s.sql("SELECT batch, count(*) AS n FROM sink GROUP BY batch").df.collect()
    return {r.batch: r.n for r in rows}


def _frame(spark: Any, batch: int, n: int = 3) -> Any:
    return spark.createDataFrame(
        [(batch, f"row-{batch}-{i}") for i in range(n)], "batch INT, value STRING"
    )


def test_sql_repeated_or_older_version_does_nothing(s: txsql.Session) -> None:
    first = s.sql("INSERT INTO sink VALUES (1, 'a'), (1, 'b')", app_id="job", app_version=3)
    assert first.version == 1 and first.message == ""
    root = s.table("sink").location
    files = _files(root)
    for version in (3, 2, 0):
        again = s.sql(
            "INSERT INTO sink VALUES (1, 'a'), (1, 'b')", app_id="job", app_version=version
        )
        assert again.version is None
        assert again.metrics == {"num_affected_rows": 0}
        assert again.message.startswith(f"skipped: app 'job' version {version} already committed")
        assert "(table at version 1" in again.message
    assert _files(root) == files, "a skipped statement writes no file"
    assert s.table("sink").version() == 1
    newer = s.sql("INSERT INTO sink VALUES (2, 'c')", app_id="job", app_version=4)
    assert newer.version == 2 and newer.metrics["num_affected_rows"] == 1
    assert s.table("sink").app_version("job") == 4
    assert _batches(s) == {1: 2, 2: 1}


def test_dml_statements_are_idempotent_too(s: txsql.Session) -> None:
    s.sql("INSERT INTO sink VALUES (1, 'a'), (2, 'b')")
    for _ in range(2):
        s.sql("UPDATE sink SET batch = batch + 10 WHERE value = 'a'", app_id="fix", app_version=1)
    for _ in range(2):
        s.sql("DELETE FROM sink WHERE value = 'b'", app_id="fix", app_version=2)
    assert _batches(s) == {11: 1}
    ops = [r.operation for r in s.table("sink").history().collect()]
    assert ops == ["DELETE", "UPDATE", "WRITE", "CREATE TABLE"], "the re-runs committed nothing"


def test_the_txn_action_is_in_the_log_and_other_readers_still_read_it(s: txsql.Session) -> None:
    sink = s.table("sink")
    result = sink.append(_frame(s.spark, 0), app_id="ingest", app_version=0)
    assert result.operation == "WRITE" and result.version == 1
    root = sink.location
    with open(os.path.join(root, "_delta_log", f"{1:020d}.json")) as f:
        actions = [json.loads(line) for line in f]
    txns = [a["txn"] for a in actions if "txn" in a]
    assert len(txns) == 1 and txns[0]["appId"] == "ingest" and txns[0]["version"] == 0
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "WRITE" and info["isBlindAppend"] is True
    assert duckdb_rows(root, 1, "batch") == [(0,)] * 3
    assert deltalake_rows(root, 1, "batch") == [(0,)] * 3


def test_append_accepts_pandas_and_matches_columns_by_name(s: txsql.Session) -> None:
    sink = s.table("sink")
    frame = pd.DataFrame({"value": ["x", "y"], "batch": [7, 7]})
    assert sink.app_version("pandas") is None
    assert sink.append(frame, app_id="pandas", app_version=1).version == 1
    assert sink.append(frame, app_id="pandas", app_version=1).message.startswith("skipped")
    assert sink.append(frame).version == 2, "without an app id every append commits"
    assert sink.app_version("pandas") == 1
    assert sorted(sink.to_pandas()["value"]) == ["x", "x", "y", "y"]


def test_arguments_are_checked(s: txsql.Session) -> None:
    with pytest.raises(SqlError, match="go together"):
        s.sql("INSERT INTO sink VALUES (1, 'a')", app_id="job")
    with pytest.raises(SqlError, match="non-negative"):
        s.table("sink").append(_frame(s.spark, 1), app_id="job", app_version=-1)
    assert s.table("sink").version() == 0


def test_a_second_autocommit_write_of_one_call_is_refused(s: txsql.Session) -> None:
    # On a re-run after a crash between the two statements both would be skipped.
    with pytest.raises(TransactionError, match="BEGIN"):
        s.run_script(
            "INSERT INTO sink VALUES (1, 'a'); INSERT INTO sink VALUES (2, 'b')",
            app_id="job",
            app_version=1,
        )


def test_a_transaction_with_an_app_version_commits_once(s: txsql.Session) -> None:
    script = "BEGIN; INSERT INTO sink VALUES (1, 'a'); INSERT INTO sink VALUES (2, 'b'); COMMIT"
    committed = s.run_script(script, app_id="job", app_version=1)
    assert committed[-1].version == 1
    again = s.run_script(script, app_id="job", app_version=1)
    assert [r.operation for r in again] == ["BEGIN", "SKIPPED", "SKIPPED", "COMMIT"]
    assert again[-1].version is None and again[-1].message == "nothing was written"
    assert _batches(s) == {1: 1, 2: 1}
    assert s.table("sink").app_version("job") == 1


def test_crashed_and_restarted_writer_does_not_duplicate(s: txsql.Session, tmp_path: Path) -> None:
    """The writer commits a batch, then dies before saving its own progress marker."""
    sink = s.table("sink")
    progress = tmp_path / "progress"  # the writer's own checkpoint: last batch it knows done

    def run_writer(crash_after: int | None) -> None:
        start = int(progress.read_text()) + 1 if progress.exists() else 0
        for batch in range(start, 5):
            sink.append(_frame(s.spark, batch), app_id="writer", app_version=batch)
            if batch == crash_after:
                raise RuntimeError("crash between the commit and the progress marker")
            progress.write_text(str(batch))

    with pytest.raises(RuntimeError):
        run_writer(crash_after=2)
    assert progress.read_text() == "1" and _batches(s) == {0: 3, 1: 3, 2: 3}
    run_writer(crash_after=None)  # replays batch 2 first
    assert _batches(s) == dict.fromkeys(range(5), 3)
    assert sink.app_version("writer") == 4
    assert sink.version() == 5, "create + one commit per batch, none for the replay"


def test_a_concurrent_duplicate_that_wins_makes_ours_skip(
    s: txsql.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers run the same batch; the one committing second skips (its files orphaned)."""
    import txsql.planner.operations.writes as writes

    other = txsql.Session(spark=s.spark, warehouse=s.warehouse).table("sink")
    original = writes.write_data_files
    raced: list[int | None] = []

    def write_then_lose_the_race(*args: Any, **kwargs: Any) -> Any:
        adds = original(*args, **kwargs)
        if not raced:
            raced.append(-1)  # first: the winner's own append comes through here too
            raced[0] = other.append(_frame(s.spark, 9, 2), app_id="job", app_version=1).version
        return adds

    monkeypatch.setattr(writes, "write_data_files", write_then_lose_the_race)
    ours = s.table("sink").append(_frame(s.spark, 9), app_id="job", app_version=1)
    assert raced == [1]
    assert ours.version is None and ours.message.startswith("skipped: app 'job' version 1")
    assert _batches(s) == {9: 2}, "only the winner's rows"


def _stream_once(s: txsql.Session, source: Path, checkpoint: Path, seen: list[int]) -> None:
    writer = s.table("sink").foreach_batch_writer(app_id="json-stream")

    def spy(batch: Any, batch_id: int) -> None:
        seen.append(batch_id)
        writer(batch, batch_id)

    query = (
        s.spark.readStream.schema("batch INT, value STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.foreachBatch(spy)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        assert query.awaitTermination(120) is not False, "the query did not finish"
    finally:
        query.stop()


@pytest.fixture()
def stream_dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    source, checkpoint = tmp_path / "in", tmp_path / "chk"
    source.mkdir()
    yield source, checkpoint
    shutil.rmtree(checkpoint, ignore_errors=True)


def _json_file(source: Path, batch: int) -> None:
    lines = [json.dumps({"batch": batch, "value": f"v{batch}-{i}"}) for i in range(2)]
    (source / f"part-{batch}.json").write_text("\n".join(lines) + "\n")


def test_a_restarted_stream_replaying_a_batch_does_not_duplicate(
    s: txsql.Session, stream_dirs: tuple[Path, Path]
) -> None:
    source, checkpoint = stream_dirs
    _json_file(source, 0)
    _json_file(source, 1)
    seen: list[int] = []
    _stream_once(s, source, checkpoint, seen)
    assert seen == [0, 1] and _batches(s) == {0: 2, 1: 2}
    # The sink committed batch 1 but the "crash" came before Spark recorded it: Spark
    # finds offsets/1 without commits/1 and runs batch 1 again on restart.
    (checkpoint / "commits" / "1").unlink()
    (checkpoint / "commits" / ".1.crc").unlink(missing_ok=True)  # Hadoop's checksum of it
    _json_file(source, 2)
    _stream_once(s, source, checkpoint, seen)
    assert seen[2] == 1, "Spark replayed batch 1"
    assert seen[2:] == [1, 2]
    assert _batches(s) == {0: 2, 1: 2, 2: 2}, "the replayed batch was skipped"
    assert s.table("sink").app_version("json-stream") == 2
    assert s.table("sink").version() == 3
