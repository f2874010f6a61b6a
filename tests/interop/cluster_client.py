"""A txsql client of a Spark standalone cluster, run in its own process by test_cluster.py
(the test process already holds the suite's local SparkSession, and one process holds one
SparkContext). Prints one JSON line of results for the test to check.

Usage: python -m tests.interop.cluster_client MASTER_URL WAREHOUSE

The cluster's own Python has no txsql. First nothing is shipped: the first statement must
fail with ExecutorSetupError and write nothing. Then txsql is shipped as a zip with
``addPyFile`` (what the error's hint says) and a DML workload runs on the same session.
"""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.interop.cluster import JAVA_OPTS

# Two statements touching different rows / the same row, interleaved (both tests read these).
OTHER_ROWS = ("UPDATE t SET v = 'x' WHERE id = 4", "DELETE FROM t WHERE id = 5")
SAME_ROW = ("UPDATE t SET v = 'y' WHERE id = 1", "DELETE FROM t WHERE id = 1")
# Upserts (6, 'F') and (7, 'g'): the MERGE's summary job runs txsql code on the executors.
MERGE = (
    "MERGE INTO t USING (SELECT 6 AS id, 'F' AS v UNION ALL SELECT 7 AS id, 'g' AS v) AS s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
)


def main(master_url: str, warehouse: str) -> None:
    import txsql

    started = time.monotonic()
    spark = _cluster_session(master_url)
    session_seconds = time.monotonic() - started
    try:
        session = txsql.Session(spark=spark, warehouse=warehouse)
        checked = time.monotonic()
        out: dict[str, Any] = {"unshipped": unshipped(session)}
        unshipped_seconds = time.monotonic() - checked
        # The remedy the error's hint names, on the running session: ship txsql as a zip.
        spark.sparkContext.addPyFile(_zip_txsql(Path(warehouse).parent / "txsql.zip"))
        out.update(shipped(session))
    finally:
        spark.stop()
    out["seconds"] = {
        "session": session_seconds,
        "unshipped": unshipped_seconds,
        "total": time.monotonic() - started,
    }
    print(json.dumps(out))


def _cluster_session(master_url: str) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master_url)
        .appName("txsql-cluster-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "512m")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        # Start jobs only once both executors registered, so both take part.
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "90s")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.executor.extraJavaOptions", JAVA_OPTS)
        .config("spark.driver.extraJavaOptions", JAVA_OPTS)
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _zip_txsql(target: Path) -> str:
    """The txsql package this process imports, as a zip for ``spark.submit.pyFiles``."""
    import txsql

    package = Path(txsql.__file__).parent
    with zipfile.ZipFile(target, "w") as zf:
        for source in sorted(package.rglob("*.py")):
            zf.write(source, source.relative_to(package.parent).as_posix())
    return str(target)


def _executors(spark: Any) -> list[tuple[str, str]]:
    """(working directory, txsql's file) of the Python workers of 4 tasks."""

    def where(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import txsql as shipped_txsql

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict(
            {"cwd": [os.getcwd()], "txsql": [shipped_txsql.__file__], "pid": [os.getpid()]}
        )

    rows = spark.range(0, 4, numPartitions=4).mapInArrow(
        where, "cwd string, txsql string, pid long"
    )
    return sorted({(r.cwd, r.txsql) for r in rows.collect()})


def shipped(session: Any) -> dict[str, Any]:
    from txsql.engine import dv_filter

    # Expand deletion vectors on the executors even for these tiny tables (above 1M deleted
    # rows they always are): the executors read the DV files themselves.
    assert hasattr(dv_filter, "_DRIVER_EXPANSION_ROWS"), "the threshold moved: update this"
    dv_filter._DRIVER_EXPANSION_ROWS = 0
    steps: dict[str, float] = {}  # seconds per step, to see where a slow run spends time

    def step(name: str, run: Callable[[], Any]) -> Any:
        started = time.monotonic()
        value = run()
        steps[name] = round(time.monotonic() - started, 2)
        return value

    sql = session.sql
    out: dict[str, Any] = {"executors": step("executors", lambda: _executors(session.spark))}
    step("create", lambda: sql("CREATE TABLE t (id BIGINT, v STRING)"))
    values = ", ".join(f"({i}, '{v}')" for i, v in zip(range(1, 7), "abcdef"))
    step("insert", lambda: sql(f"INSERT INTO t VALUES {values}"))
    step("delete", lambda: sql("DELETE FROM t WHERE id = 2"))
    step("update", lambda: sql("UPDATE t SET v = 'C' WHERE id = 3"))
    out["merge_version"] = step("merge", lambda: sql(MERGE).version)
    out["pair_versions"] = step("other_rows", lambda: _interleave(session, OTHER_ROWS))
    out["same_row"] = step("same_row", lambda: _interleave(session, SAME_ROW))
    table = session.table("t")
    out["location"] = table.location
    out["version"] = table.version()
    out["rows"] = step("select", lambda: _rows(session, "SELECT id, v FROM t"))
    out["rows_v2"] = step(
        "time_travel", lambda: _rows(session, "SELECT id, v FROM t VERSION AS OF 2")
    )
    out["dv_files"] = sorted(p.name for p in Path(table.location).glob("deletion_vector_*.bin"))
    out["steps"] = steps
    return out


def _interleave(session: Any, statements: tuple[str, str]) -> list[Any]:
    """Run two statements in interleaved transactions; the commit outcome of each."""
    first, second = session.begin(), session.begin()
    first.sql(statements[0])
    second.sql(statements[1])
    outcomes: list[Any] = []
    for tx in (first, second):
        try:
            outcomes.append(tx.commit().version)
        except Exception as e:  # reported to the test, which asserts the type
            outcomes.append(type(e).__name__)
    return outcomes


def _rows(session: Any, query: str) -> list[list[Any]]:
    return sorted([r.id, r.v] for r in session.sql(query).df.collect())


def unshipped(session: Any) -> dict[str, Any]:
    try:
        session.sql("CREATE TABLE t (id BIGINT, v STRING)")
    except Exception as e:
        from txsql.errors import TxSqlError

        hint = e.hint if isinstance(e, TxSqlError) else ""
        out: dict[str, Any] = {"error": type(e).__name__, "message": str(e), "hint": hint}
    else:
        out = {"error": None}
    out["table_dir_exists"] = os.path.exists(os.path.join(session.warehouse, "t"))
    out["catalog_entry_exists"] = os.path.exists(
        os.path.join(session.warehouse, "_txsql_catalog", "t.json")
    )
    return out


if __name__ == "__main__":
    main(*sys.argv[1:3])
