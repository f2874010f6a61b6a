"""Liquid clustering: CREATE/ALTER TABLE ... CLUSTER BY, DESCRIBE DETAIL, and OPTIMIZE that
clusters (incremental, FULL), with data skipping judged from the log's own min/max stats.

Oracles: DuckDB's delta extension and deltalake read the rows after every step; which
files a point predicate may touch is computed here from the stats JSON of the commits.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import SchemaError, UnsupportedStatementError
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark


def _live_stats(location: str) -> dict[str, dict[str, Any]]:
    """path -> add action of every live file, replayed from the JSON commits."""
    live: dict[str, dict[str, Any]] = {}
    for commit in sorted((Path(location) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return live


def _files_touched(location: str, column: str, value: int) -> int:
    touched = 0
    for add in _live_stats(location).values():
        stats = json.loads(add["stats"])
        if stats["minValues"][column] <= value <= stats["maxValues"][column]:
            touched += 1
    return touched


def _agree(s: txsql.Session, table: str) -> list[tuple[Any, ...]]:
    t = s.table(table)
    ours = sorted(tuple(r) for r in s.sql(f"SELECT k, v FROM {table}").df.collect())
    assert duckdb_rows(t.location, t.version(), "k, v") == ours
    assert deltalake_rows(t.location, t.version(), "k, v") == ours
    return ours


def test_optimize_clusters_and_skips(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE c (k BIGINT, v STRING) CLUSTER BY (k) "
        "TBLPROPERTIES ('delta.targetFileSize' = '128kb')"
    )
    snapshot = s.table("c").log.snapshot()
    assert {"clustering", "domainMetadata"} <= set(snapshot.protocol.writer_features or ())
    assert json.loads(snapshot.domains["delta.clustering"].configuration) == {
        "clusteringColumns": [["k"]]
    }
    assert s.sql("DESCRIBE DETAIL c").df.collect()[0]["clusteringColumns"] == ["k"]
    keys = list(range(160_000))
    random.Random(7).shuffle(keys)
    for part in range(8):  # random order: every file spans the whole key range
        chunk = keys[part * 20_000 : (part + 1) * 20_000]
        s.spark.createDataFrame([(k,) for k in chunk], "k BIGINT").createOrReplaceTempView("src")
        s.sql("INSERT INTO c SELECT k, CAST(k % 97 AS STRING) FROM src")
    location = s.table("c").location
    probe = keys[12_345]
    before = _files_touched(location, "k", probe)
    assert before >= 8
    expected = _agree(s, "c")
    s.sql("OPTIMIZE c")
    files = _live_stats(location)
    assert len(files) > 2 and {f.get("clusteringProvider") for f in files.values()} == {"liquid"}
    assert _files_touched(location, "k", probe) <= 2
    assert _agree(s, "c") == expected

    # Incremental: only the new file is clustered; FULL reclusters everything.
    s.sql("INSERT INTO c VALUES (-1, 'new')")
    clustered = set(_live_stats(location))
    s.sql("OPTIMIZE c")
    after = set(_live_stats(location))
    assert len(clustered - after) == 1 and len(after - clustered) == 1
    s.sql("OPTIMIZE c FULL")
    assert not (after & set(_live_stats(location)))
    assert _agree(s, "c") == sorted([*expected, (-1, "new")])


def test_alter_cluster_by_and_ctas(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE c CLUSTER BY (k) AS SELECT id AS k, CAST(id AS STRING) AS v FROM range(50)")
    assert s.sql("DESCRIBE DETAIL c").df.collect()[0]["clusteringColumns"] == ["k"]
    s.sql("CREATE TABLE p (k BIGINT, v STRING)")
    s.sql("INSERT INTO p VALUES (3, 'c'), (1, 'a')")
    s.sql("INSERT INTO p VALUES (2, 'b')")
    s.sql("ALTER TABLE p CLUSTER BY (v, k)")
    assert s.sql("DESCRIBE DETAIL p").df.collect()[0]["clusteringColumns"] == ["v", "k"]
    s.sql("OPTIMIZE p")
    assert {f.clustering_provider for f in s.table("p").log.snapshot().files} == {"liquid"}
    s.sql("ALTER TABLE p CLUSTER BY NONE")
    assert s.sql("DESCRIBE DETAIL p").df.collect()[0]["clusteringColumns"] == []
    assert _agree(s, "p") == [(1, "a"), (2, "b"), (3, "c")]


@pytest.mark.parametrize(
    ("statement", "error", "named"),
    [
        ("CREATE TABLE x (k INT) CLUSTER BY AUTO", UnsupportedStatementError, "AUTO"),
        (
            "CREATE TABLE x (k INT) PARTITIONED BY (k) CLUSTER BY (k)",
            UnsupportedStatementError,
            "partitioned",
        ),
        ("CREATE OR REPLACE TABLE x (k INT) CLUSTER BY (k)", UnsupportedStatementError, "REPLACE"),
        ("CREATE TABLE x (k INT) CLUSTER BY (nope)", SchemaError, "nope"),
        ("ALTER TABLE plain CLUSTER BY NONE", SchemaError, "not clustered"),
        ("OPTIMIZE plain FULL", SchemaError, "not clustered"),
        ("ALTER TABLE parts CLUSTER BY (k)", txsql.errors.UnsupportedFeatureError, "partitioned"),
    ],
)
def test_refused_by_name(
    spark: Any, tmp_path: Path, statement: str, error: type[Exception], named: str
) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE plain (k INT)")
    s.sql("CREATE TABLE parts (k INT, p INT) PARTITIONED BY (p)")
    with pytest.raises(error, match=named) as refused:
        s.sql(statement)
    assert getattr(refused.value, "hint", None)
    assert not (tmp_path / "wh" / "x").exists()
    assert DeltaLog.for_path(s.table("plain").location).latest_version() == 0
