"""MERGE on the big-target plan (the persisted join of ``execute.py``), forced on a table
of a few thousand rows in several files with deletion vectors already present.

Each MERGE's result must equal DuckDB's MERGE of the same rows, and the committed table
must read the same through DuckDB's ``delta_scan`` and ``deltalake``. A MERGE refused for
a duplicate match leaves the table exactly as it was; a concurrent writer that deletes a
row the MERGE matched makes the MERGE's commit fail, one that changes an unmatched row of
the same file does not.
"""

from __future__ import annotations

import gc
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_connection, duckdb_rows
from txsql.errors import (
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    MergeCardinalityError,
)
from txsql.planner.operations.merge import execute as mx
from txsql.planner.operations.merge.check import SourceRows
from txsql.planner.operations.merge.execute import CHECKPOINT_PLANNING_ENV, SPLIT_ROWS_ENV
from txsql.planner.operations.merge.small_target import SMALL_TARGET_ROWS_ENV

pytestmark = pytest.mark.spark

Row = tuple[Any, ...]
ROWS = 4000  # ids 0..3999 in 4 files; ids divisible by 7 deleted before the MERGE
COLUMNS = "id, k, v"
SCHEMA = "id BIGINT, k INT, v STRING"
MULTI_CLAUSE = (
    "MERGE INTO t USING src ON t.id = src.id "
    "WHEN MATCHED AND src.v IS NULL THEN DELETE "
    "WHEN MATCHED AND t.k = 3 THEN UPDATE SET v = concat(t.v, '+', src.v) "
    "WHEN MATCHED THEN UPDATE SET v = src.v, k = src.k "
    "WHEN NOT MATCHED AND src.k = 0 THEN INSERT (id, k, v) VALUES (src.id, -1, 'zero') "
    "WHEN NOT MATCHED THEN INSERT * "
    "WHEN NOT MATCHED BY SOURCE AND t.id % 500 = 1 THEN UPDATE SET v = 'orphan' "
    "WHEN NOT MATCHED BY SOURCE AND t.id % 500 = 2 THEN DELETE"
)
UPSERT = (
    "MERGE INTO t USING src ON t.id = src.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


@pytest.fixture()
def s(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> txsql.Session:
    monkeypatch.setenv(SMALL_TARGET_ROWS_ENV, "0")  # never the one-query path
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql(f"CREATE TABLE t ({SCHEMA})")
    session.sql(
        "INSERT INTO t SELECT id, CAST(id % 10 AS INT), concat('v', CAST(id AS STRING)) "
        f"FROM range(0, {ROWS}, 1, 4)"
    )
    session.sql("DELETE FROM t WHERE id % 7 = 0")  # deletion vectors in every file
    return session


def _source(spark: Any, rows: list[Row]) -> None:
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("src")


def _source_rows() -> list[Row]:
    """Matches spread over every file (some of them deleted rows), NULL values, new ids."""
    rows: list[Row] = []
    for i in range(0, ROWS, 37):
        rows.append((i, i % 10, None if i % 74 == 0 else f"s{i}"))
    for i in range(ROWS, ROWS + 60):
        rows.append((i, i % 3, f"n{i}"))
    return rows


def _table(s: txsql.Session) -> Counter[Row]:
    return Counter(tuple(r) for r in s.sql(f"SELECT {COLUMNS} FROM t").df.collect())


def _duckdb_merge(target: Counter[Row], source: list[Row], statements: list[str]) -> Counter[Row]:
    """The oracle: DuckDB runs the statements on plain tables."""
    con = duckdb_connection()
    try:
        for name, rows in (("t", list(target.elements())), ("src", source)):
            con.execute(f"CREATE TABLE {name} (id BIGINT, k INTEGER, v VARCHAR)")
            con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", rows)
        for statement in statements:
            con.execute(statement)
        return Counter(con.execute(f"SELECT {COLUMNS} FROM t").fetchall())
    finally:
        con.close()


def _assert_readers(s: txsql.Session, expected: Counter[Row]) -> None:
    handle = s.table("t")
    want = sorted(expected.elements(), key=repr)
    assert sorted(duckdb_rows(handle.location, handle.version(), COLUMNS), key=repr) == want
    assert sorted(deltalake_rows(handle.location, handle.version(), COLUMNS), key=repr) == want


@pytest.mark.parametrize("split", [True, False], ids=["split-join", "one-join"])
def test_multi_clause_merge_matches_duckdb_and_readers(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    if not split:
        monkeypatch.setenv(SPLIT_ROWS_ENV, "0")
    source = _source_rows()
    _source(spark, source)
    before = _table(s)
    expected = _duckdb_merge(before, source, [MULTI_CLAUSE])
    result = s.sql(MULTI_CLAUSE)
    assert _table(s) == expected
    _assert_readers(s, expected)
    m = result.metrics
    inserted = sum(expected.values()) - sum(before.values()) + m["num_deleted_rows"]
    # The 60 new ids, and the source ids whose target row a DV already deleted.
    revived = sum(1 for i in range(0, ROWS, 37) if i % 7 == 0)
    assert m["num_inserted_rows"] == inserted == 60 + revived
    assert m["num_updated_rows"] > 0 and m["num_deleted_rows"] > 0


def test_a_source_above_sparks_broadcast_threshold_is_broadcast(
    s: txsql.Session,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With Spark's own threshold off, a source small next to the target is still broadcast
    (by the hint) where the join can build on it (the split join's target-to-source inner
    join): the target is streamed instead of shuffled. Same rows."""
    joins: list[Any] = []
    classify = mx.classify

    def recording(*args: Any, **kwargs: Any) -> Any:
        joined = classify(*args, **kwargs)
        joins.append((kwargs.get("broadcast_source"), joined))
        return joined

    monkeypatch.setattr(mx, "classify", recording)
    source = _source_rows()
    _source(spark, source)
    expected = _duckdb_merge(_table(s), source, [UPSERT])
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        s.sql(UPSERT)
        [(hinted, joined)] = joins
        joined.explain()
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
    assert hinted is True
    plan = capsys.readouterr().out
    assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan
    assert _table(s) == expected
    _assert_readers(s, expected)


def test_duplicate_match_is_refused_and_leaves_the_table_unchanged(
    s: txsql.Session, spark: Any, tmp_path: Path
) -> None:
    # Id 999 (a live row) is matched by two source rows; the rest would be valid.
    source = [*_source_rows(), (999, 9, "again")]
    _source(spark, source)
    handle = s.table("t")
    version, before = handle.version(), _table(s)
    data_files = sorted(p.name for p in Path(handle.location).rglob("*.parquet"))
    with pytest.raises(MergeCardinalityError):
        s.sql(UPSERT)
    assert s.table("t").version() == version
    assert _table(s) == before
    _assert_readers(s, before)
    # Nothing the refused MERGE wrote stays behind.
    assert sorted(p.name for p in Path(handle.location).rglob("*.parquet")) == data_files


@pytest.fixture(params=[False, True], ids=["persisted-source", "checkpointed-source"])
def checkpointed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways a MERGE holds its source: persisted, or checkpointed (forced here by a
    zero planning budget; by default a source slow to plan, e.g. a pandas DataFrame)."""
    monkeypatch.setenv(CHECKPOINT_PLANNING_ENV, "0" if request.param else "1e9")
    return bool(request.param)


def test_concurrent_delete_of_a_matched_row_conflicts(
    s: txsql.Session, spark: Any, checkpointed: bool
) -> None:
    source = [(1002, 2, "ours"), (2003, 3, "ours"), (ROWS + 1, 1, "new")]
    _source(spark, source)
    start = _table(s)
    tx = s.begin()
    tx.sql(UPSERT)
    winner = "DELETE FROM t WHERE id = 2003"
    s.sql(winner)
    _source(spark, [(1, 1, "replaced view")])  # the check joins the source as the MERGE saw it
    with pytest.raises((ConcurrentDeleteReadError, ConcurrentDeleteDeleteError)):
        tx.commit()
    expected = _duckdb_merge(start, source, [winner])
    assert _table(s) == expected
    _assert_readers(s, expected)


def test_concurrent_change_of_an_unmatched_row_commits(
    s: txsql.Session, spark: Any, checkpointed: bool
) -> None:
    # 2004 sits in the file of 2003 (ids 2000..2999): another row, so both commit.
    source = [(1002, 2, "ours"), (2003, 3, "ours"), (ROWS + 1, 1, "new")]
    _source(spark, source)
    start = _table(s)
    tx = s.begin()
    tx.sql(UPSERT)
    winner = "UPDATE t SET v = 'won' WHERE id = 2004"
    s.sql(winner)
    tx.commit()
    expected = _duckdb_merge(start, source, [winner, UPSERT])
    assert _table(s) == expected
    _assert_readers(s, expected)


@pytest.mark.parametrize("split", [True, False], ids=["split-join", "one-join"])
def test_a_checkpointed_source_gives_the_rows_and_jobs_of_a_persisted_one(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    """A pandas source (its plan carries every row) is checkpointed once its planning
    passes the budget: same rows as DuckDB's MERGE, same Spark job count as the
    persisted source (the checkpoint's job also counts the rows)."""
    if not split:
        monkeypatch.setenv(SPLIT_ROWS_ENV, "0")
    ways: list[bool] = []
    statement_source = mx.statement_source

    @contextmanager
    def recording(source: Any) -> Iterator[tuple[Any, int | None]]:
        with statement_source(source) as (rows, counted):
            ways.append(counted is not None)
            yield rows, counted

    monkeypatch.setattr(mx, "statement_source", recording)
    source = _source_rows()
    spark.createDataFrame(
        pd.DataFrame(source, columns=["id", "k", "v"]).astype({"k": "int32"})
    ).createOrReplaceTempView("src")
    before = _table(s)
    expected = _duckdb_merge(before, source, [MULTI_CLAUSE])
    jobs = []
    for budget in ("1e9", "0"):  # persisted, then checkpointed, on two copies
        monkeypatch.setenv(CHECKPOINT_PLANNING_ENV, budget)
        tx = s.begin()
        jobs.append(tx.sql(MULTI_CLAUSE).metrics["spark_jobs"])
        if budget == "1e9":
            tx.rollback()
        else:
            tx.commit()
    assert ways == [False, True]
    assert jobs[0] == jobs[1]
    assert _table(s) == expected
    _assert_readers(s, expected)


def test_a_checkpointed_source_is_evaluated_once(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-deterministic source: the rows counted, inserted and updated are the same
    evaluation of it."""
    monkeypatch.setenv(CHECKPOINT_PLANNING_ENV, "0")
    spark.sql(
        "SELECT id * 3 AS id, CAST(rand() * 10 AS INT) AS k, 'r' AS v "
        f"FROM range(0, {2 * ROWS // 3})"
    ).createOrReplaceTempView("src")
    result = s.sql(
        "MERGE INTO t USING src ON t.id = src.id "
        "WHEN MATCHED AND src.k < 5 THEN UPDATE SET k = src.k, v = 'updated' "
        "WHEN NOT MATCHED AND src.k < 5 THEN INSERT (id, k, v) VALUES (src.id, src.k, 'new')"
    )
    rows = _table(s)
    changed = [(k, v, n) for (_, k, v), n in rows.items() if v in ("updated", "new")]
    assert all(k < 5 for k, _, _ in changed)  # as the clause conditions saw them
    updated = sum(n for _, v, n in changed if v == "updated")
    assert result.metrics["num_updated_rows"] == updated > 0
    inserted = sum(n for _, v, n in changed if v == "new")
    assert result.metrics["num_inserted_rows"] == inserted > 0
    assert _operation_metrics(s)["numSourceRows"] == 2 * ROWS // 3
    _assert_readers(s, rows)


def test_a_checkpointed_source_is_unreferenced_after_the_statement(
    s: txsql.Session, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the conflict check's handle references a checkpointed source after its job
    (a projection, no second cached copy), and txsql drops it by the next statement
    boundary after the transaction; Spark's cleaner then frees the stored rows once the
    JVM has collected the RDD (forced every 5 minutes by ``local_session``)."""
    monkeypatch.setenv(CHECKPOINT_PLANNING_ENV, "0")
    _source(spark, _source_rows())
    kept: list[weakref.ref[Any]] = []
    capture = SourceRows.capture.__func__  # type: ignore[attr-defined]

    def remembering(cls: type[SourceRows], *args: Any) -> SourceRows:
        rows = capture(cls, *args)
        kept.append(weakref.ref(rows.kept))
        return rows

    monkeypatch.setattr(SourceRows, "capture", classmethod(remembering))
    tx = s.begin()
    tx.sql(UPSERT)
    gc.collect()
    handle = kept[0]()
    assert handle is not None  # the open transaction's conflict check still needs it
    assert not handle.is_cached
    del handle
    tx.commit()
    for _ in range(2):
        s.sql(UPSERT)
    del tx
    gc.collect()  # finalizes the transactions' source handles: their releases are queued
    s.sql("SELECT count(*) FROM t")  # a statement boundary: queued releases run
    gc.collect()
    assert len(kept) == 3
    assert [ref() for ref in kept] == [None, None, None]


def _operation_metrics(s: txsql.Session) -> dict[str, int]:
    handle = s.table("t")
    info = handle.snapshot(handle.version()).commit_info
    assert info is not None
    return {k: int(v) for k, v in (info.operation_metrics or {}).items()}
