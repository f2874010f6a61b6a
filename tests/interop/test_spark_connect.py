"""txsql on Spark Connect: proves the read path uses no JVM internals (py4j, _jvm, RDDs)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixture_cases import CASES, expected_rows
from tests.interop.connect_store_client import WORKLOAD
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.planner.operations.merge.execute import CHECKPOINT_PLANNING_ENV

pytestmark = pytest.mark.connect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import pyspark

    spark_home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    log_file = tmp_path_factory.mktemp("connect") / "server.log"
    env = {**os.environ, "SPARK_HOME": spark_home, "PYSPARK_PYTHON": sys.executable}
    # pip's pyspark ships the Connect server jar but not sbin/start-connect-server.sh;
    # that script is a thin wrapper around exactly this spark-submit call.
    command = [
        os.path.join(spark_home, "bin", "spark-submit"),
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=4",
        "spark-internal",
    ]  # fmt: skip
    with open(log_file, "wb") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            if server.poll() is not None:
                pytest.fail(f"Spark Connect server exited; see {log_file}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(f"Spark Connect server did not start; see {log_file}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture(scope="module")
def connect_results(
    connect_url: str, fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Run the client in a fresh process: one process cannot mix classic and Connect."""
    warehouse = tmp_path_factory.mktemp("connect-warehouse")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.interop.connect_client", connect_url, str(fixtures_dir),
         str(warehouse)],
        cwd=root, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_client_really_used_spark_connect(connect_results: dict[str, Any]) -> None:
    assert connect_results["session_module"].startswith("pyspark.sql.connect")


@pytest.mark.parametrize(
    ("fixture", "version", "expected"), CASES, ids=[f"{t}@v{v}" for t, v, _ in CASES]
)
def test_fixture_reads_over_spark_connect(
    connect_results: dict[str, Any], fixture: str, version: int, expected: Any
) -> None:
    rows = [tuple(r) for r in connect_results["cases"][f"{fixture}@v{version}"]]
    want = expected_rows(expected)
    if isinstance(want, int):
        assert len(rows) == want
    else:
        assert rows == sorted(
            tuple(v if isinstance(v, (int, float, str, type(None))) else str(v) for v in r)
            for r in want
        )


def test_sql_write_and_time_travel_over_spark_connect(connect_results: dict[str, Any]) -> None:
    assert connect_results["latest_ids"] == [1, 2, 11, 12]
    assert connect_results["v1_count"] == 2


# --- a client that reaches the warehouse only through txsql.storage --------------------


@pytest.fixture(scope="module", params=["1e9", "0"], ids=["persisted", "checkpointed"])
def store_results(
    connect_url: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, Any]:
    """The guarded client (tests/interop/connect_store_client.py) on a file:// warehouse,
    its MERGE holding the source persisted, then checkpointed (Connect reports no
    metrics observed by a checkpoint)."""
    warehouse = tmp_path_factory.mktemp("connect-store") / "wh"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, CHECKPOINT_PLANNING_ENV: request.param}
    done = subprocess.run(
        [sys.executable, "-m", "tests.interop.connect_store_client", connect_url,
         warehouse.as_uri()],
        cwd=root, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_client_reaches_log_catalog_and_dvs_only_through_the_store(
    store_results: dict[str, Any],
) -> None:
    assert "error" not in store_results, store_results
    assert store_results["violations"] == []
    assert store_results["allowed"] > 0, "txsql.storage did the log's I/O under the guard"
    assert store_results["guard_refuses_direct_reads"], "the guard was live"


def test_guarded_client_rows_match_independent_readers(store_results: dict[str, Any]) -> None:
    location = store_results["location"]
    assert store_results["versions"] == list(range(1, len(WORKLOAD) + 1))
    assert store_results["history"] == list(range(len(WORKLOAD), -1, -1))
    for version, key in ((len(WORKLOAD), "rows"), (2, "rows_v2")):
        spark_rows = [tuple(r) for r in store_results[key]]
        assert spark_rows == _replay(version)
        assert deltalake_rows(location, version, "id, v") == spark_rows
        assert duckdb_rows(location, version, "id, v") == spark_rows


def _replay(version: int) -> list[tuple[int, str]]:
    """The workload's rows after ``version`` (1: INSERT, 2: DELETE, 3: UPDATE, 4: MERGE)."""
    rows = dict(zip(range(1, 5), "abcd"))
    steps = [
        lambda r: r,
        lambda r: {k: v for k, v in r.items() if k != 2},
        lambda r: {**r, 3: "C"},
        lambda r: {**r, 4: "D", 5: "e"},
    ]
    for step in steps[:version]:
        rows = step(rows)
    return sorted(rows.items())
