"""User DML raced by idle maintenance (tiny idle time, seeded random pauses, 100 statements
with maintenance steps starting between and under them): no user statement aborts and the
final rows, read by txsql and by DuckDB's delta reader, equal DuckDB's serial replay of the
statements on a plain table."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

import txsql
from tests.interop.readers import duckdb_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROUNDS = 100


def _statement(rng: random.Random, i: int) -> str:
    kind = rng.choice(["insert", "update", "delete", "merge"])
    k = rng.randrange(20)
    if kind == "insert":
        return f"INSERT INTO t VALUES ({100 + i}, {k})"
    if kind == "update":
        return f"UPDATE t SET v = v + 1 WHERE id % 5 = {k % 5}"
    if kind == "delete":
        return f"DELETE FROM t WHERE id = {k}"
    return (
        f"MERGE INTO t USING (SELECT {k} AS id, {i} AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )


def test_user_dml_raced_by_maintenance(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(35)
    s = txsql.Session(spark, str(tmp_path / "wh"), maintenance=True, maintenance_idle_seconds=0.05)
    db = duckdb.connect()
    setup = ["CREATE TABLE t (id INT, v INT)", "INSERT INTO t SELECT i, 0 FROM range(20) r(i)"]
    s.sql(setup[0])
    s.sql("INSERT INTO t VALUES " + ", ".join(f"({i}, 0)" for i in range(20)))
    db.execute(setup[0])
    db.execute(setup[1])
    try:
        for i in range(ROUNDS):
            text = _statement(rng, i)
            s.sql(text)  # must never raise because of maintenance
            db.execute(text)
            time.sleep(rng.uniform(0.0, 0.3))  # often past the idle time
    finally:
        s.close()
    got = sorted(tuple(r) for r in s.sql("SELECT id, v FROM t").df.collect())
    want = sorted(tuple(r) for r in db.execute("SELECT id, v FROM t").fetchall())
    assert got == want
    version = s.table("t").version()
    assert duckdb_rows(s.table("t").location, version, "id, v") == want  # an outside reader
    ops = [r["operation"] for r in s.sql("DESCRIBE HISTORY t").df.collect()]
    assert {"REORG", "OPTIMIZE"} & set(ops)  # maintenance did run in between
