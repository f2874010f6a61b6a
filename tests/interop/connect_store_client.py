"""A Spark Connect client that may reach its warehouse only through txsql.storage.

Run in its own process by tests/interop/test_spark_connect.py with the warehouse given as a
``file://`` URI. Before anything else it installs tests/interop/local_io_guard.py on the
warehouse directory: any local file access there from outside ``txsql.storage`` fails and
is recorded. The Spark Connect server (another process) reads and writes the data files;
this process reads and writes the log, the catalog and deletion vectors through the store
interface. Prints one JSON line of results.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urlparse

# Where txsql still touches the table directory with local paths outside txsql.storage,
# today: the data-file side of local tables (Spark's staged Parquet files moved into place,
# their sizes and footers; CREATE's check and claim of the directory; the pre-scan check
# that data files exist). The log, checkpoints, the catalog and deletion vectors are not
# here: any access to them outside txsql.storage fails the statement and the test.
DATA_FILE_SITES = frozenset(
    {
        "txsql.engine.write",
        "txsql.engine.file_stats:file_stats",  # the footer of a local data file
        "txsql.planner.locations:check_location_empty",
        "txsql.planner.locations:claim_location",
        "txsql.engine.scan_files:is_present",
    }
)
# Versions 1.. are these statements after CREATE TABLE (version 0).
WORKLOAD = (
    "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
    "DELETE FROM t WHERE id = 2",
    "UPDATE t SET v = 'C' WHERE id = 3",
    "MERGE INTO t USING (SELECT 4 AS id, 'D' AS v UNION ALL SELECT 5 AS id, 'e' AS v) AS s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
)


def main(url: str, warehouse_uri: str) -> None:
    from tests.interop import local_io_guard

    guard = local_io_guard.install(urlparse(warehouse_uri).path, DATA_FILE_SITES)
    from pyspark.sql import SparkSession

    import txsql

    spark = SparkSession.builder.remote(url).getOrCreate()
    out: dict[str, Any] = {"session_module": type(spark).__module__}
    try:
        session = txsql.Session(spark=spark, warehouse=warehouse_uri)
        session.sql("CREATE TABLE t (id BIGINT, v STRING)")
        out["versions"] = [session.sql(statement).version for statement in WORKLOAD]
        out["rows"] = _rows(session, "SELECT id, v FROM t")
        out["rows_v2"] = _rows(session, "SELECT id, v FROM t VERSION AS OF 2")
        out["history"] = [r.version for r in session.sql("DESCRIBE HISTORY t").df.collect()]
        out["location"] = session.table("t").location
    except Exception as e:  # reported with the guard's record, which usually explains it
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        spark.stop()
    out["violations"] = list(guard.violations)
    out["guard_refuses_direct_reads"] = _direct_read_refused(out.get("location"))
    out["allowed"] = guard.allowed
    out["site_accesses"] = sorted(guard.site_accesses)
    print(json.dumps(out))


def _direct_read_refused(location: str | None) -> bool:
    """The guard is live: this script reading the log itself is refused."""
    if location is None:
        return False
    try:
        with open(f"{location}/_delta_log/00000000000000000000.json", "rb"):
            return False
    except PermissionError:
        return True


def _rows(session: Any, query: str) -> list[list[Any]]:
    return sorted([r.id, r.v] for r in session.sql(query).df.collect())


if __name__ == "__main__":
    main(*sys.argv[1:3])
