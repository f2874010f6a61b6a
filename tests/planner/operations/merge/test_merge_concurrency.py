"""MERGE racing other writers: conflicts decided by the join with the source, not the table.

Every race is deterministic: our MERGE runs inside ``s.begin()``, the winner commits in
between, then we commit. The final table must equal what some serial order of the
committed statements produces, computed by DuckDB running the same SQL on plain tables,
and DuckDB's delta_scan and deltalake must read the same rows.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_connection, duckdb_rows
from txsql.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
)

pytestmark = pytest.mark.spark

Row = tuple[Any, ...]
SCHEMA = "id INT, v STRING, p INT"
BATCHES: list[list[Row]] = [
    [(1, "a", 1), (2, "b", 1), (3, "c", 1)],
    [(4, "d", 2), (5, "e", 2), (6, "f", 2)],  # a second file (another partition if any)
]
UPSERT = (
    "MERGE INTO t USING {src} ON t.id = {src}.id WHEN MATCHED THEN UPDATE SET * "
    "WHEN NOT MATCHED THEN INSERT *"
)


@pytest.fixture()
def s(spark: Any, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _create(s: txsql.Session, *, partitioned: bool = False, dvs: bool = True) -> None:
    by = " PARTITIONED BY (p)" if partitioned else ""
    props = "" if dvs else " TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
    s.sql(f"CREATE TABLE t ({SCHEMA}){by}{props}")
    for batch in BATCHES:
        s.sql("INSERT INTO t VALUES " + ", ".join(f"({i}, '{v}', {p})" for i, v, p in batch))


def _view(spark: Any, name: str, rows: list[Row]) -> None:
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView(name)


def _rows(s: txsql.Session) -> Counter[Row]:
    return Counter(tuple(r) for r in s.sql("SELECT id, v, p FROM t").df.collect())


def _serial(start: Counter[Row], sources: dict[str, list[Row]], order: list[str]) -> Counter[Row]:
    """The oracle: DuckDB runs ``order`` one statement after another on plain tables."""
    con = duckdb_connection()
    try:
        for name, rows in {"t": list(start.elements()), **sources}.items():
            con.execute(f"CREATE TABLE {name} (id INTEGER, v VARCHAR, p INTEGER)")
            if rows:
                con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", rows)
        for statement in order:
            con.execute(statement)
        return Counter(con.execute("SELECT id, v, p FROM t").fetchall())
    finally:
        con.close()


def _assert_readers(s: txsql.Session, expected: Counter[Row]) -> None:
    handle = s.table("t")
    want = sorted(expected.elements())
    assert duckdb_rows(handle.location, handle.version(), "id, v, p") == want
    assert deltalake_rows(handle.location, handle.version(), "id, v, p") == want


def _race(
    s: txsql.Session,
    spark: Any,
    ours: tuple[str, list[Row]],
    winner: str,
    *,
    isolation: str | None = None,
    conflict: type[Exception] | tuple[type[Exception], ...] | None = None,
    winner_source: list[Row] | None = None,
) -> Counter[Row]:
    """Our MERGE (source view ``ours_src``) stages, ``winner`` commits, then we commit.

    ``winner_source`` is the rows of the winner's source view ``win_src``, if it has one.

    Without ``conflict`` both must commit and the table must equal a serial order of the
    two; with it our commit must fail with it and the table hold the winner's effect only.
    """
    statement, source = ours
    _view(spark, "ours_src", source)
    sources = {"ours_src": source}
    if winner_source is not None:
        _view(spark, "win_src", winner_source)
        sources["win_src"] = winner_source
    start = _rows(s)
    tx = s.begin(isolation)
    tx.sql(statement)
    s.sql(winner)
    # Replacing the view must not change what the conflict check joins with.
    _view(spark, "ours_src", [(99, "zz", 9)])
    if conflict is None:
        tx.commit()
        orders = [[statement, winner], [winner, statement]]
        possible = [_serial(start, sources, order) for order in orders]
    else:
        with pytest.raises(conflict):
            tx.commit()
        possible = [_serial(start, sources, [winner])]
    after = _rows(s)
    assert after in possible
    _assert_readers(s, after)
    return after


@pytest.mark.parametrize(
    ("partitioned", "dvs"),
    [(False, True), (False, False), (True, True)],
    ids=["unpartitioned-dv", "unpartitioned-copy-on-write", "partitioned-dv"],
)
def test_merges_upserting_disjoint_keys_both_commit(
    s: txsql.Session, spark: Any, partitioned: bool, dvs: bool
) -> None:
    _create(s, partitioned=partitioned, dvs=dvs)
    # Ours updates id 1 (first file) and inserts 10; the winner updates 4 (second file)
    # and inserts 20: no row of either joins with the other's source.
    winner = UPSERT.format(src="win_src")
    ours = UPSERT.format(src="ours_src"), [(1, "O", 1), (10, "O", 1)]
    after = _race(s, spark, ours, winner, winner_source=[(4, "W", 2), (20, "W", 2)])
    assert after[(10, "O", 1)] == 1 and after[(20, "W", 2)] == 1


def test_merges_inserting_the_same_new_key_conflict(s: txsql.Session, spark: Any) -> None:
    _create(s)
    ours = UPSERT.format(src="ours_src"), [(10, "O", 1)]
    winner = UPSERT.format(src="win_src")
    # Our view is replaced before our commit: the check still sees key 10.
    after = _race(
        s, spark, ours, winner, conflict=ConcurrentAppendError, winner_source=[(10, "W", 1)]
    )
    assert [r for r in after.elements() if r[0] == 10] == [(10, "W", 1)]


@pytest.mark.parametrize("isolation", ["WriteSerializable", "Serializable"])
def test_merge_against_a_blind_insert_of_the_same_key(
    s: txsql.Session, spark: Any, isolation: str
) -> None:
    """Delta's documented behaviour: WriteSerializable orders the blind INSERT after the
    MERGE (both commit, key 10 twice); Serializable refuses the MERGE."""
    _create(s)
    ours = UPSERT.format(src="ours_src"), [(10, "O", 1)]
    insert = "INSERT INTO t VALUES (10, 'I', 1)"
    if isolation == "Serializable":
        _race(s, spark, ours, insert, isolation=isolation, conflict=ConcurrentAppendError)
        return
    after = _race(s, spark, ours, insert, isolation=isolation)
    assert sorted(r for r in after.elements() if r[0] == 10) == [(10, "I", 1), (10, "O", 1)]


def test_winner_dml_conflicts_only_through_rows_that_join(s: txsql.Session, spark: Any) -> None:
    _create(s)
    upsert = UPSERT.format(src="ours_src")
    # The winner updates id 2 in the file where we update id 1: rows differ, DVs merge.
    _race(s, spark, (upsert, [(1, "O", 1), (10, "O", 1)]), "UPDATE t SET v = 'u' WHERE id = 2")
    # The winner deletes a row we matched.
    deleted = (ConcurrentDeleteReadError, ConcurrentDeleteDeleteError)
    _race(s, spark, (upsert, [(3, "O", 1)]), "DELETE FROM t WHERE id = 3", conflict=deleted)
    # The winner moves a row onto a key our source inserts: an added row joins.
    moved = "UPDATE t SET id = 30 WHERE id = 5"
    _race(s, spark, (upsert, [(30, "O", 2)]), moved, conflict=ConcurrentAppendError)


def test_not_matched_by_source_reads_the_rows_its_condition_selects(
    s: txsql.Session, spark: Any
) -> None:
    _create(s)
    merge = (
        "MERGE INTO t USING ours_src ON t.id = ours_src.id WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED BY SOURCE AND t.p = 2 THEN DELETE"
    )
    source = [(1, "O", 1), (4, "O", 2)]
    # A row the clause cannot see (p = 3) and that joins nothing: both commit.
    insert_p3 = "INSERT INTO t VALUES (7, 'w', 3)"
    _race(s, spark, (merge, source), insert_p3, isolation="Serializable")
    # A row the clause would have deleted (p = 2): Serializable must refuse.
    insert_p2 = "INSERT INTO t VALUES (8, 'w', 2)"
    _race(
        s,
        spark,
        (merge, source),
        insert_p2,
        isolation="Serializable",
        conflict=ConcurrentAppendError,
    )
