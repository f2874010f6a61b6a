"""The shared DV machinery (MERGE uses it too) and the Spark row-predicate hook."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from txsql.dv.store import read_deletion_vector
from txsql.errors import TxSqlError
from txsql.log.actions import AddFile
from txsql.log.predicates import Column, Comparison, Literal, Opaque
from txsql.planner.dml import dv_writes
from txsql.planner.dml.dv_writes import mark_rows_deleted
from txsql.planner.dml.row_check import SparkRowChecker
from txsql.storage.filesystem import LocalFileIO
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE t (id BIGINT, p INT)")
    for low in (0, 10, 20):
        session.sql(
            f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 1 FROM range({low}, {low + 5})"
        )
    return session


def _matched(s: txsql.Session, rows: list[tuple[str, int]]) -> Any:
    return s.spark.createDataFrame(rows, "_file string, _row_index bigint")


@pytest.fixture(params=["collected", "bitmaps_on_executors"])
def strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of gathering matched rows: as Arrow pairs, or as per-task bitmaps."""
    if request.param == "bitmaps_on_executors":
        monkeypatch.setattr(dv_writes, "DIRECT_ROWS", -1)
    return str(request.param)


def test_bitmaps_per_file_one_dv_file_per_task_union_and_full_removal(
    s: txsql.Session, strategy: str
) -> None:
    snapshot = s.table("t").snapshot()
    a, b, c = sorted(snapshot.files, key=lambda f: f.modification_time)[:3]
    ctx = s._context
    rows = [(a.path, 1), (a.path, 3), (a.path, 3), (b.path, 0)]
    single = _matched(s, rows).coalesce(1)  # one task: both DVs share one file
    outcome = mark_rows_deleted(ctx, snapshot, single)
    assert outcome.num_deleted_rows == 3 and outcome.num_dvs_added == 2
    assert {k: sorted(v) for k, v in outcome.matched_rows_by_file.items()} == {
        a.path: [1, 3],
        b.path: [0],
    }
    adds = {x.path: x for x in outcome.actions if isinstance(x, AddFile)}
    dvs = {x.deletion_vector.path_or_inline_dv for x in adds.values() if x.deletion_vector}
    assert len(dvs) == 1 and len(outcome.written_paths) == 1
    root = snapshot.table_root
    a_dv = adds[a.path].deletion_vector
    assert a_dv is not None and sorted(read_deletion_vector(a_dv, root, LocalFileIO())) == [1, 3]
    assert outcome.dv_counts("num_target")["num_target_deletion_vectors_added"] == 2

    # Apply it, then delete more rows of `a` plus all of `c`.
    with Transaction(s.table("t").log) as txn:
        txn.stage(outcome.actions)
        txn.commit("DELETE")
    snapshot = s.table("t").snapshot()
    a2 = next(f for f in snapshot.files if f.path == a.path)
    rows = [(a.path, 0), (a.path, 1)] + [(c.path, i) for i in range(5)]
    second = mark_rows_deleted(ctx, snapshot, _matched(s, rows), candidates=[a2, c])
    assert second.num_deleted_rows == 6  # row 1 of `a` was already deleted
    assert (second.num_dvs_updated, second.num_removed_files) == (1, 1)
    assert sorted(second.matched_rows_by_file[a.path]) == [0]
    new_a = next(x for x in second.actions if isinstance(x, AddFile) and x.path == a.path)
    assert new_a.deletion_vector is not None
    assert sorted(read_deletion_vector(new_a.deletion_vector, root, LocalFileIO())) == [0, 1, 3]
    assert second.dv_counts() == {
        "num_deletion_vectors_added": 1,
        "num_deletion_vectors_removed": 1,
        "num_deletion_vectors_updated": 1,
    }
    second.cleanup()
    assert not any(Path(p).exists() for p in second.written_paths)


def test_a_row_of_a_file_outside_the_candidates_is_refused(s: txsql.Session, strategy: str) -> None:
    snapshot = s.table("t").snapshot()
    a, b = sorted(snapshot.files, key=lambda f: f.modification_time)[:2]
    rows = _matched(s, [(a.path, 0), (b.path, 1)])
    with pytest.raises(TxSqlError, match="unexpected file"):
        mark_rows_deleted(s._context, snapshot, rows, candidates=[a])


def test_row_checker_scans_only_the_given_files(s: txsql.Session) -> None:
    log = s.table("t").log
    txn = Transaction(log)
    checker = SparkRowChecker(s.spark, txn)
    files = sorted(txn.snapshot().files, key=lambda f: f.modification_time)  # type: ignore[union-attr]
    assert checker(Comparison("=", Column("id"), Literal(12)), files[1:2]) is True
    assert checker(Comparison("=", Column("id"), Literal(12)), files[:1]) is False
    assert checker(Opaque("id % 5 = 4 AND id > 20", frozenset({"id"})), files) is True
    assert checker(Opaque("no_such_column = 1"), files) is True  # unsure means conflict
    assert checker(Comparison("=", Column("id"), Literal(1)), []) is False
