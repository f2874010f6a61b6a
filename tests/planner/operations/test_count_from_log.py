"""COUNT(*) from the log: same answer as Spark's scan of the same version, zero Spark jobs."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.planner.operations import query as query_module
from txsql.result import Result

pytestmark = pytest.mark.spark


class Spy:
    """Counts the queries that took the normal path (Spark over snapshot views)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = query_module.query_dataframe

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(query_module, "query_dataframe", spy)


def _jobs_in_group(spark: Any, group: str, action: Any) -> tuple[Any, int]:
    """Run ``action`` in a Spark job group; return its value and the jobs Spark ran for it."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        value = action()
    finally:
        # A fresh marker group per call: Spark keeps only the newest jobs of a session.
        marker = f"txsql-count-marker-{uuid.uuid4().hex}"
        sc.setJobGroup(marker, "marker")
    # Spark's listener bus is asynchronous but ordered: once a later marker job shows up,
    # every job of the group above has been recorded too.
    spark.range(1).count()
    deadline = time.monotonic() + 30
    while not sc.statusTracker().getJobIdsForGroup(marker):
        assert time.monotonic() < deadline, "Spark never reported the marker job"
        time.sleep(0.05)
    sc.setJobGroup("", "")
    return value, len(sc.statusTracker().getJobIdsForGroup(group))


def _normal_path_count(s: txsql.Session, query: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The oracle: Spark's own count of the same query, the fast path switched off."""
    with monkeypatch.context() as m:
        m.setattr(query_module, "count_from_log", lambda *args: None)
        value: int = s.sql(query).df.collect()[0][0]
    return value


def _spark_schema(spark: Any, projection: str) -> Any:
    """What Spark itself names and types the projection over a plain temp view."""
    spark.range(2).createOrReplaceTempView("txsql_count_probe")
    return spark.sql(f"SELECT {projection} FROM txsql_count_probe").schema


def _columns(schema: Any) -> list[tuple[str, Any, bool]]:
    return [(f.name, f.dataType, f.nullable) for f in schema.fields]


def _fast(
    spark: Any, s: txsql.Session, query: str, spy: Spy, group: str, resolve_jobs: int = 0
) -> tuple[Result, int]:
    """Run ``query``: it must skip the normal path and run no Spark job, not even collect().

    ``resolve_jobs``: jobs allowed while resolving the version (TIMESTAMP AS OF evaluates
    its expression in Spark, on either path).
    """
    before = spy.calls
    result, jobs = _jobs_in_group(spark, group, lambda: s.sql(query))
    assert spy.calls == before, f"{query} took the normal path"
    rows, collect_jobs = _jobs_in_group(spark, group + "-collect", lambda: result.df.collect())
    assert jobs <= resolve_jobs and collect_jobs == 0, f"{query} ran Spark jobs"
    return result, rows[0][0]


def _has_dv(location: Path) -> bool:
    return any("deletionVector" in p.read_text() for p in (location / "_delta_log").glob("*.json"))


def test_count_after_dml_with_dvs_partitions_and_time_travel(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    location = tmp_path / "wh" / "t"
    spy = Spy(monkeypatch)
    s.sql("CREATE TABLE t (id BIGINT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'b'), (5, 'c')")  # v1
    s.sql("DELETE FROM t WHERE id = 2")  # v2: a DV
    s.sql("UPDATE t SET id = id + 10 WHERE id = 3")  # v3
    s.sql(
        "CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM VALUES (4L, 'b'), (6L, 'c') AS v(id, p)"
    )
    s.sql(
        "MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT *"
    )  # v4
    assert _has_dv(location)
    for query, projection in [
        ("SELECT COUNT(*) FROM t", "COUNT(*)"),
        ("select count(1) from t", "count(1)"),
        ("SELECT COUNT(*) AS n FROM t x", "COUNT(*) AS n"),
        ("SELECT COUNT(*) FROM t VERSION AS OF 2", "COUNT(*)"),
        ("SELECT COUNT(*) FROM t@v1", "COUNT(*)"),
        ("SELECT COUNT(*) FROM t@v3", "COUNT(*)"),
    ]:
        result, count = _fast(spark, s, query, spy, "fast")
        assert count == _normal_path_count(s, query, monkeypatch), query
        assert _columns(result.df.schema) == _columns(_spark_schema(spark, projection)), query
    for version in range(1, 5):
        _, count = _fast(spark, s, f"SELECT COUNT(*) FROM t VERSION AS OF {version}", spy, "v")
        assert count == len(duckdb_rows(str(location), version, "id")), version
    # TIMESTAMP AS OF: a time after the last commit reads the latest version.
    later = "SELECT COUNT(*) FROM t TIMESTAMP AS OF current_timestamp()"
    result, count = _fast(spark, s, later, spy, "ts", resolve_jobs=1)
    assert (result.version, count) == (4, len(duckdb_rows(str(location), 4, "id")))


def test_other_shapes_take_the_normal_path(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, NULL), (2, 'c')")
    s.sql("CREATE OR REPLACE TEMP VIEW tv AS SELECT * FROM t")
    spy = Spy(monkeypatch)
    for query, expected in [
        ("SELECT COUNT(*) FROM t WHERE id = 2", 2),
        ("SELECT COUNT(v) FROM t", 2),
        ("SELECT COUNT(DISTINCT id) FROM t", 2),
        ("SELECT COUNT(*), 1 FROM t", 3),
        ("SELECT COUNT(*) FROM t GROUP BY id ORDER BY 1 DESC", 2),
        ("SELECT COUNT(*) FROM t HAVING COUNT(*) > 1", 3),
        ("SELECT DISTINCT COUNT(*) FROM t", 3),
        ("SELECT COUNT(2) FROM t", 3),
        ("SELECT COUNT(*) + 0 FROM t", 3),
        ("SELECT COUNT(*) FROM t a JOIN t b ON a.id = b.id", 5),
        ("SELECT COUNT(*) FROM tv", 3),
        ("WITH c AS (SELECT * FROM t) SELECT COUNT(*) FROM c", 3),
        ("SELECT COUNT(*) FROM t UNION ALL SELECT 7", 3),
    ]:
        before = spy.calls
        rows = s.sql(query).df.collect()
        assert spy.calls == before + 1, query
        assert rows[0][0] == expected, query
    before = spy.calls
    assert s.sql("SELECT COUNT(*) FROM t LIMIT 0").df.collect() == []
    assert spy.calls == before + 1


def test_files_without_stats_fall_back(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT)")
    s.sql("INSERT INTO t VALUES (1), (2), (3)")  # v1
    s.sql("INSERT INTO t VALUES (4)")  # v2
    # Strip numRecords from v2's add: another writer that wrote no stats.
    commit = tmp_path / "wh" / "t" / "_delta_log" / f"{2:020d}.json"
    lines = []
    for line in commit.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            action["add"].pop("stats", None)
        lines.append(json.dumps(action))
    commit.write_text("\n".join(lines) + "\n")
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    spy = Spy(monkeypatch)
    assert s.sql("SELECT COUNT(*) FROM t").df.collect()[0][0] == 4
    assert spy.calls == 1  # the normal path counted
    _, count = _fast(spark, s, "SELECT COUNT(*) FROM t VERSION AS OF 1", spy, "v1")
    assert count == 3  # version 1's file still has its stats


def test_count_inside_begin_reads_the_pinned_snapshot_and_records_the_read(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT)")
    s.sql("CREATE TABLE u (n BIGINT)")
    s.sql("INSERT INTO t VALUES (1), (2)")
    spy = Spy(monkeypatch)

    # Staged writes count; another session's commit after the pin does not.
    tx = s.begin()
    tx.sql("INSERT INTO t VALUES (3)")
    tx.sql("DELETE FROM t WHERE id = 1")
    assert tx.sql("SELECT COUNT(*) FROM t").df.collect()[0][0] == 2
    assert spy.calls == 0
    tx.commit()
    assert s.sql("SELECT COUNT(*) FROM t").df.collect()[0][0] == 2

    # The count is a whole-table read: a concurrent insert into t conflicts under
    # Serializable, as the same read through Spark would.
    tx = s.begin("SERIALIZABLE")
    n = tx.sql("SELECT COUNT(*) FROM t").df.collect()[0][0]
    s.sql("INSERT INTO t VALUES (9)")
    assert tx.sql("SELECT COUNT(*) FROM t").df.collect()[0][0] == n  # still pinned
    tx.sql(f"INSERT INTO u VALUES ({n})")
    with pytest.raises(txsql.errors.CommitConflictError):
        tx.commit()
    assert spy.calls == 0
    assert s.sql("SELECT COUNT(*) FROM u").df.collect()[0][0] == 0
    assert s.sql("SELECT COUNT(*) FROM t").df.collect()[0][0] == 3
