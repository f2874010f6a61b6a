"""txsql on a Spark standalone cluster: a master and two workers in separate processes.

The executors are other JVMs with their own Python workers, whose Python has no txsql
(tests/interop/cluster.py hides the installed one), so this checks what a single-process
``local[N]`` session cannot: that executors import txsql only when it is shipped, that the
first statement says how to ship it when it is not, and that DML with deletion vectors, a
row-level race and time travel work when executors are other processes. The data plane is
a local directory all processes share (s3a needs hadoop-aws jars not available here).
Final rows are checked in this process with deltalake and DuckDB against a serial replay.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import txsql.errors
from tests.interop.cluster import Cluster, standalone_cluster
from tests.interop.cluster_client import OTHER_ROWS, SAME_ROW
from tests.interop.readers import deltalake_rows, duckdb_rows

pytestmark = [pytest.mark.interop, pytest.mark.slow]

Rows = dict[int, str]
CLIENT_TIMEOUT = 300  # seconds; about 20 on an idle 2-core machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def results(cluster: Cluster) -> dict[str, Any]:
    """Run the client; on a hang, kill its whole process group (the driver JVM included)."""
    warehouse = cluster.log_dir / "warehouse"
    root = Path(__file__).resolve().parents[2]
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.interop.cluster_client", cluster.master_url,
         str(warehouse)],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = client.communicate(timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(client.pid, signal.SIGKILL)
        client.communicate()
        pytest.fail(f"the cluster client hung for {CLIENT_TIMEOUT}s; logs in {cluster.log_dir}")
    assert client.returncode == 0, f"logs in {cluster.log_dir}\n{stderr[-4000:]}"
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return result


# --- the oracle: the workload replayed serially on a dict ---------------------------------


def _update(key: int, value: str) -> Callable[[Rows], Rows]:
    return lambda rows: {k: (value if k == key else v) for k, v in rows.items()}


def _delete(key: int) -> Callable[[Rows], Rows]:
    return lambda rows: {k: v for k, v in rows.items() if k != key}


# The client's statements as dict operations, keyed by their SQL (checked below).
_OPERATIONS = {
    OTHER_ROWS[0]: _update(4, "x"),
    OTHER_ROWS[1]: _delete(5),
    SAME_ROW[0]: _update(1, "y"),
    SAME_ROW[1]: _delete(1),
}


def _replay(*steps: Callable[[Rows], Rows]) -> Rows:
    rows: Rows = dict(zip(range(1, 7), "abcdef"))  # v1: the INSERT
    for step in steps:
        rows = step(rows)
    return rows


def _sorted(rows: Rows) -> list[tuple[int, str]]:
    return sorted(rows.items())


V2 = (_delete(2),)  # DELETE id = 2
V3 = (*V2, _update(3, "C"))  # UPDATE id = 3
V4 = (*V3, lambda rows: {**rows, 6: "F", 7: "g"})  # the MERGE upserting 6 and 7


def _expected_final(results: dict[str, Any]) -> list[list[tuple[int, str]]]:
    """Every final state a serial order of the interleaved commits that succeeded allows."""
    states = []
    other = [_OPERATIONS[s] for s in OTHER_ROWS]
    for pair in (other, other[::-1]):  # both committed: either serial order
        committed = [
            _OPERATIONS[s]
            for s, outcome in zip(SAME_ROW, results["same_row"])
            if isinstance(outcome, int)
        ]
        states.append(_sorted(_replay(*V4, *pair, *committed)))
    return states


# --- the tests ----------------------------------------------------------------------------


def test_executors_are_other_processes_using_the_shipped_txsql(
    results: dict[str, Any], cluster: Cluster
) -> None:
    executors = results["executors"]
    work_dirs = {Path(cwd).parts[-3] for cwd, _ in executors}
    assert work_dirs == {"worker0", "worker1"}, f"tasks ran on both workers: {executors}"
    assert all(Path(cwd).is_relative_to(cluster.log_dir) for cwd, _ in executors)
    assert all(".zip" in module for _, module in executors), "txsql came from the shipped zip"


def test_first_statement_without_txsql_on_executors_fails_typed(
    results: dict[str, Any],
) -> None:
    unshipped = results["unshipped"]
    assert unshipped["error"] == "ExecutorSetupError", unshipped
    assert "cannot import txsql" in unshipped["message"]
    assert "spark.submit.pyFiles" in unshipped["hint"]
    assert "pip install txsql" in unshipped["hint"]
    assert not unshipped["table_dir_exists"], "the refused CREATE TABLE wrote nothing"
    assert not unshipped["catalog_entry_exists"], "nor registered the name"


def test_dml_with_deletion_vectors_through_the_cluster(results: dict[str, Any]) -> None:
    location = results["location"]
    assert results["dv_files"], "DELETE/UPDATE wrote deletion vector files"
    log = Path(location) / "_delta_log"
    dv_adds = [
        action["add"]
        for commit in sorted(log.glob("*.json"))
        for action in map(json.loads, commit.read_text().splitlines())
        if "add" in action and action["add"].get("deletionVector")
    ]
    assert dv_adds, "the log references the deletion vectors"
    want_v2 = _sorted(_replay(*V2))
    assert [tuple(r) for r in results["rows_v2"]] == want_v2, "time travel through Spark"
    assert deltalake_rows(location, 2, "id, v") == want_v2
    assert duckdb_rows(location, 2, "id, v") == want_v2


def test_merge_through_the_cluster(results: dict[str, Any]) -> None:
    assert results["merge_version"] == 4
    assert deltalake_rows(results["location"], 4, "id, v") == _sorted(_replay(*V4))


def test_row_level_race_on_different_rows_both_commit(results: dict[str, Any]) -> None:
    first, second = results["pair_versions"]
    assert (first, second) == (5, 6), "both interleaved transactions committed, in order"


def test_race_on_the_same_row_conflicts(results: dict[str, Any]) -> None:
    winner, loser = results["same_row"]
    assert winner == 7
    conflict = getattr(txsql.errors, loser, None)
    assert isinstance(conflict, type) and issubclass(conflict, txsql.errors.CommitConflictError)
    assert results["version"] == 7, "the losing transaction wrote nothing"


def test_final_rows_match_a_serial_order(results: dict[str, Any]) -> None:
    location, version = results["location"], results["version"]
    possible = _expected_final(results)
    spark_rows = [tuple(r) for r in results["rows"]]
    assert spark_rows in possible
    assert deltalake_rows(location, version, "id, v") == spark_rows
    assert duckdb_rows(location, version, "id, v") == spark_rows
