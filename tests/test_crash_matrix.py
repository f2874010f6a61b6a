"""kill -9 a writer at every phase of a write, and at random moments; nothing may be lost.

After each killed writer: the log's versions are contiguous, txsql (log replay plus DV
files) and DuckDB's delta extension read the table, the ``amount`` column sums to the
running total the last commit recorded (every commit's ``amountDelta`` adds up), and the
next writer commits. Phases without Spark drive the real commit path from
``tests.crash_writer``; one Spark child, running alongside, is killed after its data files
were moved into the table. ``TXSQL_CRASH_RANDOM_TRIALS`` raises the number of random-moment kills.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.interop.readers import duckdb_connection
from txsql.dv.store import read_deletion_vector
from txsql.log.actions import CommitInfo
from txsql.log.deltalog import DeltaLog
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.leftovers import remove_stale_leftovers

ROOT_DIR = Path(__file__).resolve().parent.parent
PHASES = [
    "data_written",
    "dv_written",
    "commit_temp_written",
    "commit_linked",
    "checkpoint_written",
    "last_checkpoint_written",
    "log_cleanup",
]
RANDOM_TRIALS = int(os.environ.get("TXSQL_CRASH_RANDOM_TRIALS", "3"))
OPS_PER_CHILD = 12  # enough to reach a checkpoint and a log cleanup from any start


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TXSQL_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _writer(root: Path, seed: int, ops: int, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.crash_writer", str(root), str(ops), str(seed)],
        cwd=ROOT_DIR,
        env=_env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _txsql_sum(root: Path) -> tuple[int, int, int]:
    """(version, rows, sum of amount) from txsql's log replay and DV files."""
    snapshot = DeltaLog.for_path(str(root)).snapshot()
    rows = total = 0
    for f in snapshot.files:
        amounts = pq.read_table(os.path.join(root, f.path))["amount"].to_pylist()
        deleted = set()
        if f.deletion_vector is not None:
            deleted = set(read_deletion_vector(f.deletion_vector, str(root), LocalFileIO()))
        live = [a for i, a in enumerate(amounts) if i not in deleted]
        rows, total = rows + len(live), total + sum(live)
    return snapshot.version, rows, total


def _metrics(log: DeltaLog, version: int) -> tuple[int, int]:
    info = next(a for a in log.read_commit(version) if isinstance(a, CommitInfo))
    metrics = info.operation_metrics or {}
    return int(metrics["amountDelta"]), int(metrics["amountTotal"])


def check_table(root: Path) -> int:
    """Every invariant after a crash; returns the latest version."""
    log = DeltaLog.for_path(str(root))
    versions = log.store.list_commits()
    assert versions == list(range(versions[0], versions[-1] + 1)), f"gap in {versions}"
    version, rows, total = _txsql_sum(root)
    assert version == versions[-1]
    recorded = [_metrics(log, v) for v in versions]
    for (_, before), (delta, after) in itertools.pairwise(recorded):
        assert after == before + delta, "each commit's delta adds up to its total"
    assert total == recorded[-1][1], "the rows hold exactly what the committed metrics say"
    con = duckdb_connection()
    try:
        count, duck_total = con.execute(
            f"SELECT count(*), coalesce(sum(amount), 0) FROM delta_scan('{root}')"
        ).fetchone()  # type: ignore[misc]
    finally:
        con.close()
    assert (count, duck_total) == (rows, total), "DuckDB agrees with txsql"
    _, hidden = _hidden_log_files(root)
    assert all(h.endswith(".tmp") for h in hidden)
    return version


def _hidden_log_files(root: Path) -> tuple[list[str], list[str]]:
    names = sorted(os.listdir(root / "_delta_log"))
    return [n for n in names if not n.startswith(".")], [n for n in names if n.startswith(".")]


def _create(root: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from tests.crash_writer import create_table; create_table({str(root)!r})",
        ],
        cwd=ROOT_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


_SPARK_CHILD = textwrap.dedent(
    """
    import os, sys
    from txsql.engine.spark import local_session
    from txsql.session import Session
    s = Session(local_session("local[1]", "crash-child"), warehouse=sys.argv[1])
    s.sql("CREATE TABLE t (id BIGINT, amount BIGINT)")
    s.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    os.environ["TXSQL_CRASH_AT"] = "data_written"
    s.sql("INSERT INTO t VALUES (3, 30)")
    """
)


@pytest.mark.slow
def test_kill_9_at_every_phase_and_at_random_moments(tmp_path: Path) -> None:
    # The one Spark child (JVM start dominates) runs while the Python-only trials do.
    warehouse = tmp_path / "wh"
    spark_child = subprocess.Popen(
        [sys.executable, "-c", _SPARK_CHILD, str(warehouse)],
        cwd=ROOT_DIR,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _python_writers(tmp_path / "t")
        _, err = spark_child.communicate(timeout=600)
    finally:
        if spark_child.poll() is None:
            spark_child.kill()
            spark_child.communicate()
    assert spark_child.returncode == -signal.SIGKILL, err[-3000:]
    _check_spark_table(warehouse)


def _python_writers(root: Path) -> None:
    _create(root)
    rng = random.Random(9)
    killed_at: list[str] = []
    left_temp = False
    for seed, phase in enumerate(PHASES):
        before = check_table(root)
        child = _writer(root, seed, OPS_PER_CHILD, TXSQL_CRASH_AT=phase)
        _, err = child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, f"{phase} never reached: {err}"
        killed_at.append(phase)
        assert check_table(root) >= before
        left_temp |= bool(_hidden_log_files(root)[1])
    for trial in range(RANDOM_TRIALS):
        child = _writer(root, 100 + trial, OPS_PER_CHILD)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.6))  # 12 operations take about a second
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=120)
        check_table(root)
    # the next writer commits on top of whatever the last kill left
    latest = check_table(root)
    child = _writer(root, 999, 3)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.split() == ["ready", "done"], err
    assert check_table(root) == latest + 3
    assert killed_at == PHASES
    # killed between temp write and link, a writer leaves a hidden temp; cleanup removes it
    assert left_temp
    removed = remove_stale_leftovers(str(root), max_age_ms=0)
    assert removed.temp_files and not _hidden_log_files(root)[1]
    check_table(root)


def _check_spark_table(warehouse: Path) -> None:
    root = next(p.parent for p in warehouse.rglob("_delta_log"))
    log = DeltaLog.for_path(str(root))
    assert log.store.list_commits() == [0, 1], "the killed INSERT committed nothing"
    _, rows, total = _txsql_sum(root)
    assert (rows, total) == (2, 30)
    con = duckdb_connection()
    try:
        assert con.execute(f"SELECT sum(amount) FROM delta_scan('{root}')").fetchone() == (30,)
    finally:
        con.close()
    staging = root / "_txsql_staging"
    assert staging.is_dir(), "the killed writer left its staging folder"
    removed = remove_stale_leftovers(str(root), max_age_ms=0)
    assert removed.staging_dirs and not staging.exists()
