"""Change data feed: txsql's writes and reads checked against deltalake's ``load_cdf``.

The oracle shares no code with txsql: deltalake (delta-rs) reads the change files and the
log itself. Rows are compared as sorted tuples including ``_change_type`` and
``_commit_version`` (commit timestamps differ by design: delta-rs uses commitInfo's).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from txsql.errors import ChangeDataFeedError, SqlError
from txsql.log.deltalog import DeltaLog
from txsql.log.history import commit_timestamps

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = ("id", "v", "p")


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _oracle(path: str, start: int, end: int | None = None) -> list[tuple[Any, ...]]:
    import pyarrow as pa
    from deltalake import DeltaTable

    reader = DeltaTable(path).load_cdf(starting_version=start, ending_version=end)
    table = pa.table(reader.read_all()).to_pylist()
    return sorted(
        (*(r[c] for c in COLUMNS), r["_change_type"], int(r["_commit_version"])) for r in table
    )


def _ours(df: Any) -> list[tuple[Any, ...]]:
    rows = df.select(*COLUMNS, "_change_type", "_commit_version").collect()
    return sorted(tuple(r) for r in rows)


def _location(s: txsql.Session, name: str) -> str:
    return s.table(name).location


def _commit_actions(path: str, version: int) -> list[str]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [next(iter(json.loads(line))) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("props", "partitioned"),
    [
        ("'delta.enableChangeDataFeed' = 'true'", False),
        ("'delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = 'false'", True),
    ],
)
def test_dml_changes_match_deltalake(s: txsql.Session, props: str, partitioned: bool) -> None:
    part = " PARTITIONED BY (p)" if partitioned else ""
    s.sql(f"CREATE TABLE t (id BIGINT, v STRING, p INT){part} TBLPROPERTIES ({props})")
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2), (4, 'd', 2)")
    s.sql("UPDATE t SET v = v || '!' WHERE id % 2 = 0")
    s.sql("DELETE FROM t WHERE id = 3")
    s.sql(
        "MERGE INTO t USING (SELECT * FROM VALUES (1, 'm', 1), (9, 'n', 3) AS s(id, v, p)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, s.p)"
    )
    s.sql("MERGE INTO t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    path = _location(s, "t")
    ours = _ours(s.sql("SELECT * FROM table_changes('t', 0)").df)
    assert ours == _oracle(path, 0)
    kinds = {(r[3], r[4]) for r in ours}
    assert ("update_preimage", 2) in kinds and ("update_postimage", 2) in kinds
    assert ("insert", 4) in kinds and ("delete", 5) in kinds
    assert "cdc" in _commit_actions(path, 2)  # UPDATE writes change files
    # A sub-range, and the Python API.
    assert _ours(s.table("t").changes(2, 3)) == _oracle(path, 2, 3)


def test_enabling_by_alter_upgrades_protocol_and_bounds_the_feed(s: txsql.Session) -> None:
    s.sql("CREATE TABLE t (id BIGINT, v STRING, p INT)")
    s.sql("INSERT INTO t VALUES (1, 'a', 1)")
    result = s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    assert "changeDataFeed" in result.message
    path = _location(s, "t")
    log = (Path(path) / "_delta_log" / f"{2:020d}.json").read_text().splitlines()
    protocol = next(json.loads(x)["protocol"] for x in log if x.startswith('{"protocol"'))
    assert "changeDataFeed" in protocol["writerFeatures"]
    s.sql("INSERT INTO t VALUES (2, 'b', 1)")
    s.sql("UPDATE t SET v = 'z' WHERE id = 1")
    assert _ours(s.table("t").changes(2)) == _oracle(path, 2)
    with pytest.raises(ChangeDataFeedError, match="not enabled for version 1"):
        s.table("t").changes(1)
    with pytest.raises(ChangeDataFeedError, match="AFTER_LATEST"):
        s.table("t").changes(9)
    with pytest.raises(ChangeDataFeedError, match="INVALID_CDC_RANGE"):
        s.table("t").changes(4, 3)
    with pytest.raises(ChangeDataFeedError, match="NULL_RANGE_BOUNDARY"):
        s.sql("SELECT * FROM table_changes('t', NULL)")
    with pytest.raises(SqlError, match="2 or 3 arguments"):
        s.sql("SELECT * FROM table_changes('t')")
    # Timestamp bounds: the first commit at or after the start, the last at or before the
    # end; a start before the feed began still fails on the version it resolves to.
    with pytest.raises(ChangeDataFeedError, match="not enabled for version 0"):
        s.sql("SELECT * FROM table_changes('t', '2000-01-01', '2999-01-01')")
    stamps = {
        v: dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
        for v, ms in commit_timestamps(DeltaLog.for_path(path).store).items()
    }
    assert _ours(s.table("t").changes(stamps[2], stamps[4])) == _oracle(path, 2, 4)
    text = stamps[3].strftime("%Y-%m-%d %H:%M:%S.%f")
    in_sql = s.sql(f"SELECT * FROM table_changes('t', '{text}', '2999-01-01 00:00:00')").df
    assert _ours(in_sql) == _oracle(path, 3)


def test_reads_a_feed_deltalake_wrote(s: txsql.Session, tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "dl")
    data = pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "p": [1, 1, 2, 2]})
    write_deltalake(path, data, configuration={"delta.enableChangeDataFeed": "true"})
    table = DeltaTable(path)
    table.update(predicate="id = 2", updates={"v": "'B'"})
    table.delete(predicate="id = 3")
    write_deltalake(path, pa.table({"id": [5], "v": ["e"], "p": [3]}), mode="append")
    ours = _ours(s.sql(f"SELECT * FROM table_changes('{path}', 0)").df)
    assert ours == _oracle(path, 0)
    assert {r[3] for r in ours} == {"insert", "delete", "update_preimage", "update_postimage"}


def test_reads_a_delta_spark_feed_with_deletion_vectors(
    s: txsql.Session, fixtures_dir: Path
) -> None:
    # Written by Delta Spark: DV deletes without change files (derived from DV diffs),
    # updates and merges with change files, OPTIMIZE commits that change nothing.
    path = str(fixtures_dir / "delta-rs" / "cdf-table-with-cdc-and-dvs")
    rows = s.table(path).changes(0).select("id", "comment", "_change_type", "_commit_version")
    ours = sorted(tuple(r) for r in rows.collect())
    import pyarrow as pa
    from deltalake import DeltaTable

    theirs = pa.table(DeltaTable(path).load_cdf(starting_version=0).read_all()).to_pylist()
    expected = sorted(
        (r["id"], r["comment"], r["_change_type"], int(r["_commit_version"])) for r in theirs
    )
    assert ours == expected and len(ours) == 43


def test_diff_magic_reads_the_feed(s: txsql.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from txsql.magics.diff import version_diff
    from txsql.table import Table

    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING, p INT) "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2)")
    s.sql("UPDATE t SET v = 'B' WHERE id = 2")
    s.sql("DELETE FROM t WHERE id = 3")
    s.sql("INSERT INTO t VALUES (4, 'd', 2), (5, 'e', 2)")
    s.sql("DELETE FROM t WHERE id = 5")
    calls: list[tuple[object, ...]] = []
    original = Table.changes

    def spy(self: Table, *args: object) -> object:
        calls.append(args)
        return original(self, *args)

    monkeypatch.setattr(Table, "changes", spy)
    # The oracle: a plain multiset difference of the two versions' rows in Python.
    old = [tuple(r) for r in s.table("t").to_pandas(version=1).itertuples(index=False)]
    new = [tuple(r) for r in s.table("t").to_pandas(version=5).itertuples(index=False)]
    view = version_diff(s, "t", 1, 5, None)
    assert calls == [(2, 5)]
    assert sorted(view.added) == [(4, "d", 2)]
    assert sorted(view.removed) == [(3, "c", 2)]
    assert view.updated == [((2, "b", 1), (2, "B", 1))]
    assert set(new) - set(old) == {(4, "d", 2), (2, "B", 1)}
    back = version_diff(s, "t", 5, 1, None)
    assert sorted(back.added) == [(3, "c", 2)] and sorted(back.removed) == [(4, "d", 2)]


def test_statements_of_one_transaction_all_reach_the_feed(s: txsql.Session) -> None:
    # One commit holds every statement; with one change file in it, readers use change
    # files alone, so the INSERT and the DV DELETE must be in change files too.
    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING, p INT) "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    s.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2)")
    with s.transaction() as tx:
        tx.sql("INSERT INTO t VALUES (4, 'd', 2), (5, 'e', 2)")
        tx.sql("DELETE FROM t WHERE id IN (1, 5)")
        tx.sql("UPDATE t SET v = 'B' WHERE id = 2")
    path = _location(s, "t")
    assert "cdc" in _commit_actions(path, 2)
    ours = _ours(s.table("t").changes(2))
    assert ours == _oracle(path, 2)
    # Row 5 came and went inside the transaction: the feed says both, like the statements.
    assert (5, "e", 2, "insert", 2) in ours and (5, "e", 2, "delete", 2) in ours
    assert (1, "a", 1, "delete", 2) in ours and (2, "B", 1, "update_postimage", 2) in ours
    # The feed as a MERGE source: apply version 2's updates to a copy of version 1.
    s.sql("CREATE TABLE c AS SELECT * FROM t VERSION AS OF 1")
    s.sql(
        "MERGE INTO c USING (SELECT * FROM table_changes('t', 2) "
        "WHERE _change_type = 'update_postimage') f ON c.id = f.id "
        "WHEN MATCHED THEN UPDATE SET v = f.v"
    )
    copy = sorted(tuple(r) for r in s.table("c").to_spark().collect())
    assert copy == [(1, "a", 1), (2, "B", 1), (3, "c", 2)]
