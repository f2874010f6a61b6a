"""DESCRIBE [EXTENDED], SHOW TBLPROPERTIES, SHOW COLUMNS, DESCRIBE HISTORY LIMIT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from txsql.errors import SchemaNotFoundError, TableNotFoundError

pytestmark = pytest.mark.spark


def test_describe_show_properties_and_columns(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id BIGINT NOT NULL COMMENT 'key', name VARCHAR(5), "
        "amount DECIMAL(10,2), p STRING) PARTITIONED BY (p) COMMENT 'about t' "
        "TBLPROPERTIES ('owner' = 'ann')"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 1.5, 'x')")
    rows = [tuple(r) for r in s.sql("DESCRIBE t").df.collect()]
    # Spark's own answer for the same schema is the oracle for the type spellings.
    spark_types = {
        r.col_name: r.data_type
        for r in spark.sql(
            "DESCRIBE QUERY SELECT CAST(1 AS BIGINT) id, CAST(1.5 AS DECIMAL(10,2)) amount, 'x' p"
        ).collect()
    }
    assert rows[:4] == [
        ("id", spark_types["id"], "key"),
        ("name", "varchar(5)", None),
        ("amount", spark_types["amount"], None),
        ("p", spark_types["p"], None),
    ]
    assert rows[4:] == [
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("p", "string", None),
    ]
    extended = {r.col_name: r.data_type for r in s.sql("DESC TABLE EXTENDED t").df.collect()}
    assert extended["Provider"] == "delta" and extended["Type"] == "MANAGED"
    assert extended["Version"] == "1" and extended["Name"] == "default.t"
    assert extended["Location"].endswith("/wh/t") and extended["Comment"] == "about t"
    assert "owner=ann" in extended["Table Properties"]

    props = dict(tuple(r) for r in s.sql("SHOW TBLPROPERTIES t").df.collect())
    assert props["owner"] == "ann" and props["delta.enableDeletionVectors"] == "true"
    assert props["delta.minReaderVersion"] == "3"
    assert [tuple(r) for r in s.sql("SHOW TBLPROPERTIES t ('owner')").df.collect()] == [
        ("owner", "ann")
    ]
    missing = s.sql("SHOW TBLPROPERTIES t ('nope')").df.first()
    assert "does not have property: nope" in missing.value
    assert [r.col_name for r in s.sql("SHOW COLUMNS IN t").df.collect()] == [
        "id",
        "name",
        "amount",
        "p",
    ]
    s.sql("INSERT INTO t VALUES (2, 'b', 2.5, 'y')")
    limited = s.sql("DESCRIBE HISTORY t LIMIT 2").df.collect()
    assert [h.version for h in limited] == [2, 1]


def test_describe_errors(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    with pytest.raises(TableNotFoundError):
        s.sql("DESCRIBE missing")
    with pytest.raises(SchemaNotFoundError):
        s.sql("SHOW COLUMNS FROM t IN nosuch")
    s.sql("CREATE SCHEMA s1")
    s.sql("CREATE TABLE s1.t (a INT)")
    assert [r.col_name for r in s.sql("SHOW COLUMNS FROM t IN s1").df.collect()] == ["a"]


def test_describe_history_is_collected_without_a_spark_job(spark: Any, tmp_path: Path) -> None:
    """The history rows are local data in the plan: no job to read them back (on a tiny
    table that job cost more than the rest of the statement). The values are those of the
    commit files themselves, read as JSON here."""
    import json
    import uuid

    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    s.sql("DELETE FROM t WHERE id = 2")
    sc: Any = spark.sparkContext
    group = f"txsql-history-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "history")
    try:
        rows = s.sql("DESCRIBE HISTORY t").df.collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup(group) == []
    log = Path(s.table("t").location) / "_delta_log"
    for row in rows:
        lines = (log / f"{row.version:020d}.json").read_text().splitlines()
        info = next(json.loads(x)["commitInfo"] for x in lines if "commitInfo" in x)
        assert row.operation == info["operation"]
        # The commit's time (the file's, or the in-commit timestamp), near commitInfo's.
        assert abs(row.timestamp.timestamp() * 1000 - info["timestamp"]) < 60_000
        assert row.operationMetrics == {k: str(v) for k, v in info["operationMetrics"].items()}
        assert row.isBlindAppend == info.get("isBlindAppend")
    assert [r.operation for r in rows] == ["DELETE", "WRITE", "CREATE TABLE"]
