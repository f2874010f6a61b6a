"""txsql on Spark Connect: proves the read path uses no JVM internals (py4j, _jvm, RDDs)."""

from __future__ import annotations

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

pytestmark = pytest.mark.connect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def connect_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    import pyspark
    from pyspark.sql import SparkSession

    spark_home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    log_file = tmp_path_factory.mktemp("connect") / "server.log"
    env = {**os.environ, "SPARK_HOME": spark_home, "PYSPARK_PYTHON": sys.executable}
    # pip's pyspark ships the Connect server jar but not sbin/start-connect-server.sh;
    # that script is a thin wrapper around exactly this spark-submit call.
    command = [
        os.path.join(spark_home, "bin", "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "spark-internal",
    ]
    with open(log_file, "wb") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if server.poll() is not None:
                pytest.fail(f"Spark Connect server exited; see {log_file}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(f"Spark Connect server did not start; see {log_file}")
        session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        yield session
        session.stop()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.mark.parametrize(
    ("fixture", "version", "expected"), CASES, ids=[f"{t}@v{v}" for t, v, _ in CASES]
)
def test_fixture_reads_over_spark_connect(
    connect_session: object, fixtures_dir: Path, fixture: str, version: int, expected: Any
) -> None:
    import txsql

    session = txsql.Session(spark=connect_session, warehouse=str(fixtures_dir))
    assert type(session.spark).__module__.startswith("pyspark.sql.connect")
    df = session.table(str(fixtures_dir / fixture)).to_spark(version=version)
    rows = sorted(tuple(r) for r in df.collect())
    want = expected_rows(expected)
    assert (len(rows) if isinstance(want, int) else rows) == want


def test_sql_write_and_time_travel_over_spark_connect(
    connect_session: object, tmp_path: Path
) -> None:
    import txsql

    s = txsql.Session(spark=connect_session, warehouse=str(tmp_path))
    s.sql("CREATE TABLE t (id BIGINT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    s.sql("INSERT INTO t SELECT id + 10, p FROM t")
    assert sorted(r.id for r in s.sql("SELECT id FROM t").df.collect()) == [1, 2, 11, 12]
    assert s.sql("SELECT count(*) AS n FROM t VERSION AS OF 1").df.first().n == 2
