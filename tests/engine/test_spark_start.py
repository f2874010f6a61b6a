"""A fresh local session started through the public API prints nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

# What a local Spark 4 start printed in red before txsql started it quietly.
NOISE = (
    "Using incubator modules",
    "log4j",
    "resolves to a loopback address",
    "SPARK_LOCAL_IP",
    "NativeCodeLoader",
    "native-hadoop",
    "Setting default log level",
    "WARN",
    "Falling back to parsing",
)

CHILD = """
import sys
import txsql

spark = txsql.local_spark("local[1]", "txsql-quiet-start")
s = txsql.Session(spark, warehouse=sys.argv[1])
s.sql("CREATE TABLE t (id BIGINT, name STRING)")
s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
print("rows", s.sql("SELECT count(*) AS n FROM t").df.collect()[0]["n"])
try:  # a Spark analysis error: raised once, typed, at Spark's position; no JSON dump
    s.sql("SELECT id,\\n       nope FROM t")
except txsql.errors.SqlError as e:
    print("analysis error at", e.line, e.column)
try:  # sqlglot parses this as a generic command: no "Falling back" warning either
    s.sql("MSCK REPAIR TABLE t")
except txsql.errors.TxSqlError as e:
    print("refused", type(e).__name__)
"""


def test_fresh_local_session_prints_nothing_on_stderr(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["TXSQL_SPARK_LOG"] = str(log)
    for name in ("SPARK_LOCAL_IP", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "warehouse")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"stderr was not empty:\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert "rows 2" in lines
    assert "analysis error at 2 8" in lines, "Spark's position of `nope`, not column 1"
    assert any(line.startswith("refused ") for line in lines)
    # The one-line note names the log, and the JVM's start-up output went there.
    assert any(line.startswith("Local Spark ") and str(log) in line for line in lines)
    assert "Using incubator modules" in log.read_text(encoding="utf-8")
    assert not [word for word in NOISE if word in done.stdout]


def test_a_jvm_that_cannot_start_is_a_typed_error_naming_the_log(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["TXSQL_SPARK_LOG"] = str(log)
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    child = (
        "import txsql\n"
        "try:\n"
        "    txsql.local_spark('local[1]')\n"
        "except txsql.errors.SparkStartError as e:\n"
        "    print('SparkStartError', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stderr == ""
    assert done.stdout.startswith("SparkStartError the local Spark JVM did not start")
    assert str(log) in done.stdout and "no-java" in done.stdout, "the log's tail says why"
