"""Runs in its own process (a process holds either a classic or a Connect session, never
both): reads every fixture case and runs a small SQL workload through Spark Connect, then
prints the rows as JSON for tests/interop/test_spark_connect.py to check."""

from __future__ import annotations

import json
import sys
from typing import Any


def main(url: str, fixtures_dir: str, warehouse: str) -> None:
    from pyspark.sql import SparkSession

    import txsql
    from tests.fixture_cases import CASES

    spark = SparkSession.builder.remote(url).getOrCreate()
    session = txsql.Session(spark=spark, warehouse=warehouse)
    out: dict[str, Any] = {"session_module": type(session.spark).__module__, "cases": {}}
    for table, version, _ in CASES:
        df = session.table(f"{fixtures_dir}/{table}").to_spark(version=version)
        out["cases"][f"{table}@v{version}"] = sorted(
            [_plain(v) for v in row] for row in df.collect()
        )
    session.sql("CREATE TABLE t (id BIGINT, p STRING) PARTITIONED BY (p)")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    session.sql("INSERT INTO t SELECT id + 10, p FROM t")
    out["latest_ids"] = sorted(r.id for r in session.sql("SELECT id FROM t").df.collect())
    out["v1_count"] = session.sql("SELECT count(*) AS n FROM t VERSION AS OF 1").df.first().n
    spark.stop()
    print(json.dumps(out))


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, type(None))) else str(value)


if __name__ == "__main__":
    main(*sys.argv[1:4])
