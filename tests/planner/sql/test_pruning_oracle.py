"""File pruning never drops a matching row: txsql's planner against Spark as the oracle.

The table holds edge values (NULL, NaN, ±0.0, ±inf, integers beyond 2**53, FLOAT values
that print short, decimals, 40-character strings, timestamps with sub-millisecond parts on
both sides of 1970, columns named ``null`` and ``my col``), one INSERT per file so every
file has real stats. For seeded random predicates, Spark evaluates each one on a plain
``spark.read.parquet`` of the data files (not txsql's scan); every file holding a matching
row must be kept by txsql's pruning, and every file txsql would remove whole must match on
every row. A few DELETEs then run end to end and must remove exactly the oracle's rows.
``TXSQL_PRUNING_N`` sets how many predicates are tried (default 150).
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlglot

import txsql
from txsql.log.deltalog import DeltaLog
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.predicates import plan_files, to_predicate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = (
    "rid BIGINT, i INT, l BIGINT, d DOUBLE, f FLOAT, m DECIMAL(20, 4), s STRING, dd DATE, "
    "ts TIMESTAMP, `null` INT, `my col` STRING, b BOOLEAN, p INT"
)
LONG = "z" * 40
NAN = "CAST('NaN' AS DOUBLE)"
# One INSERT (one file) per line: rid, i, l, d, f, m, s, dd, ts, null, my col, b, p
ROWS = [
    "(1, 1, 9007199254740993, 1.5, 0.1, 1.2345, 'abc', DATE'2024-01-01', "
    "TIMESTAMP'2024-01-01 00:00:00.000500', 1, 'x', true, 1)",
    f"(2, 2, -5, {NAN}, CAST('NaN' AS FLOAT), -1.5, 'ab', DATE'2024-01-02', "
    "TIMESTAMP'2024-01-02 12:00:00', NULL, 'y y', false, 1)",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    f"(4, 3, 9007199254740992, -0.0, CAST('Infinity' AS FLOAT), 99999999.9999, '{LONG}', "
    "DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59.999500', 7, 'y', false, 2), "
    "(5, NULL, 7, 5.0, 3.4, 0.0001, NULL, NULL, NULL, NULL, 'x', NULL, 2)",
    "(6, 2, 7, CAST('Infinity' AS DOUBLE), -0.0, 1.2345, 'b', DATE'2024-01-01', "
    "TIMESTAMP'2024-01-01 00:00:00', 2, NULL, true, NULL)",
    f"(7, 5, 9007199254740993, {NAN}, 1.0, 2, 'abd', DATE'2024-01-03', "
    "TIMESTAMP'2024-01-03 00:00:00', NULL, 'x', true, 3), "
    "(8, 6, 8, 0.0, 2.0, 3, 'abe', DATE'2024-01-03', TIMESTAMP'2024-01-03 00:00:01', "
    "3, 'z', true, 3)",
]
LITERALS = {
    "i": ["2", "2.5", "1.5", "2.0", "'2'", "NULL", "5e0", "CAST(2 AS BIGINT)"],
    "l": ["9007199254740992", "9e15", "9.007199254740992E15", "9007199254740993", "7", "7.5"],
    "d": ["1.5", "10", "1e300", NAN, "0", "-0.0", "CAST('Infinity' AS DOUBLE)", "5"],
    "f": ["0.1", "CAST(0.1 AS FLOAT)", "3.4", "0.10000000149", "CAST(3.4 AS FLOAT)", "1e38"],
    "m": ["1.2345", "1.23450", "99999999.9999", "1e8", "0.0001", "2"],
    "s": ["'abc'", "'ab'", f"'{LONG}'", "'" + "z" * 33 + "'", "'b'", "''"],
    "dd": ["DATE'2024-01-01'", "'2024-01-01'", "DATE'1969-12-31'", "DATE'2024-01-03'"],
    "ts": [
        "TIMESTAMP'2024-01-01 00:00:00'",
        "TIMESTAMP'2024-01-01 00:00:00.0005'",
        "TIMESTAMP'1969-12-31 23:59:59.9995'",
        "TIMESTAMP'2024-01-03 00:00:00.5'",
        "'2024-01-02 12:00:00'",
        "DATE'2024-01-01'",
    ],
    "`null`": ["1", "NULL", "7", "2"],
    "`my col`": ["'x'", "'y y'", "'y'"],
    "b": ["true", "false"],
    "p": ["1", "2", "NULL", "3", "1.5"],
}
OPS = ["=", "!=", "<>", "<", "<=", ">", ">=", "<=>"]


def _atom(rng: random.Random) -> str:
    column = rng.choice(list(LITERALS))
    values = LITERALS[column]
    kind = rng.random()
    if kind < 0.6:
        return f"{column} {rng.choice(OPS)} {rng.choice(values)}"
    if kind < 0.75:
        chosen = rng.sample(values, k=min(len(values), rng.randint(1, 3)))
        return f"{column} {rng.choice(['IN', 'NOT IN'])} ({', '.join(chosen)})"
    if kind < 0.85:
        return f"{column} IS {rng.choice(['', 'NOT '])}NULL"
    low, high = sorted(rng.sample(range(len(values)), 2)) if len(values) > 1 else (0, 0)
    return f"{column} BETWEEN {values[low]} AND {values[high]}"


def _predicate(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth >= 2 or roll < 0.45:
        return _atom(rng)
    if roll < 0.6:
        return f"NOT ({_predicate(rng, depth + 1)})"
    joiner = rng.choice([" AND ", " OR "])
    return "(" + joiner.join(_predicate(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"


def _valid(spark, predicates: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    """Drop predicates Spark refuses to analyse (type errors under ANSI)."""
    ok = []
    probe = spark.createDataFrame([], COLUMNS)
    probe.createOrReplaceTempView("pruning_probe")
    for text in predicates:
        try:
            _ = spark.sql(f"SELECT * FROM pruning_probe WHERE {text}").schema  # analysis only
            ok.append(text)
        except Exception:
            continue
    return ok


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pruning")
    s = txsql.Session(spark=spark, warehouse=str(root / "wh"))
    s.sql(f"CREATE TABLE t ({COLUMNS}) PARTITIONED BY (p)")
    for row in ROWS:
        s.sql(f"INSERT INTO t VALUES {row}")
    return root / "wh" / "t"


def _oracle(spark, root: Path, predicates: list[str]) -> dict[str, list[tuple[bool, bool]]]:  # type: ignore[no-untyped-def]
    """Per predicate: (file path -> (some row TRUE, every row TRUE)), evaluated by Spark."""
    snapshot = DeltaLog.for_path(str(root)).snapshot()
    paths = [str(root / f.path) for f in snapshot.files]
    df = spark.read.option("basePath", str(root)).parquet(*paths)
    df.selectExpr("*", "_metadata.file_path AS file").createOrReplaceTempView("pruning_files")
    flags = ", ".join(f"coalesce(({p}), false) AS c{i}" for i, p in enumerate(predicates))
    per_file = spark.sql(f"SELECT file, {flags} FROM pruning_files").collect()
    result: dict[str, list[tuple[bool, bool]]] = {}
    for row in per_file:
        name = row["file"].rsplit("/", 1)[-1]
        seen = result.setdefault(name, [(False, True)] * len(predicates))
        result[name] = [
            (anyv or bool(row[f"c{i}"]), allv and bool(row[f"c{i}"]))
            for i, (anyv, allv) in enumerate(seen)
        ]
    return result


def _plan(root: Path, text: str):  # type: ignore[no-untyped-def]
    snapshot = DeltaLog.for_path(str(root)).snapshot()
    where = sqlglot.parse_one(f"SELECT * FROM t WHERE {text}", read=SPARK).args["where"].this
    predicate = to_predicate(where, snapshot.schema_json, ("t",))
    return plan_files(snapshot, predicate, whole_files=True)


def _check_pruning(spark, table: Path, predicates: list[str]) -> None:  # type: ignore[no-untyped-def]
    oracle = _oracle(spark, table, predicates)
    for i, text in enumerate(predicates):
        plan = _plan(table, text)
        kept = {f.path.rsplit("/", 1)[-1] for f in plan.read}
        whole = {f.path.rsplit("/", 1)[-1] for f in plan.whole}
        for name, answers in oracle.items():
            some, every = answers[i]
            assert not some or name in kept, f"{text!r} pruned {name}, which has a matching row"
            assert name not in whole or every, f"{text!r} removes all of {name}, not all match"


def test_pruning_keeps_every_file_spark_matches(spark, table: Path) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(20261124)
    count = int(os.environ.get("TXSQL_PRUNING_N", "150"))
    predicates = _valid(spark, [_predicate(rng) for _ in range(count)])
    assert len(predicates) > count // 2  # the grammar mostly yields valid SQL
    _check_pruning(spark, table, predicates)


def test_pruning_in_a_session_time_zone_other_than_utc(spark, table: Path) -> None:  # type: ignore[no-untyped-def]
    """Zone-less timestamp literals are read in the session's zone: pruning must follow."""
    predicates = [
        f"ts {op} {lit}" for op in OPS for lit in LITERALS["ts"] + ["'2024-01-01 01:00:00'"]
    ] + [f"dd {op} {lit}" for op in ("=", "<", ">=") for lit in LITERALS["dd"]]
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        _check_pruning(spark, table, _valid(spark, predicates))
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_a_long_or_chain_plans_without_recursion(table: Path) -> None:
    text = " OR ".join(f"rid = {n}" for n in range(1000, 1600)) + " OR rid = 3"
    plan = _plan(table, text)
    assert len(plan.read) >= 1


@pytest.mark.parametrize(
    "condition",
    [
        "d > 1e300",  # NaN rows: NaN is above every double in Spark
        "d != 5",
        "l = 9e15 OR l = 9.007199254740992E15",  # 2**53 + 1 equals this double in Spark
        "f = CAST(0.1 AS FLOAT)",
        "`null` = 7 OR `my col` = 'y y'",
        "NOT (i IS NOT NULL)",
        "ts < TIMESTAMP'1969-12-31 23:59:59.9996'",
        "p IS NULL OR p = 2",
    ],
)
def test_delete_removes_exactly_the_rows_spark_selects(
    spark: SparkSession, table: Path, tmp_path: Path, condition: str
) -> None:
    copy = tmp_path / "t"
    shutil.copytree(table, copy)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    every = {r["rid"] for r in spark.read.parquet(*_files(copy)).select("rid").collect()}
    plain = spark.read.option("basePath", str(copy)).parquet(*_files(copy))
    plain.createOrReplaceTempView("pruning_plain")
    doomed = {
        r["rid"] for r in spark.sql(f"SELECT rid FROM pruning_plain WHERE {condition}").collect()
    }
    result = s.sql(f"DELETE FROM delta.`{copy}` WHERE {condition}")
    assert result.metrics["num_deleted_rows"] == len(doomed)
    left = {r[0] for r in s.sql(f"SELECT rid FROM delta.`{copy}`").df.collect()}
    assert left == every - doomed


def _files(root: Path) -> list[str]:
    return [str(root / f.path) for f in DeltaLog.for_path(str(root)).snapshot().files]
