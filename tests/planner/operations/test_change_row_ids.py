"""``table_changes`` on a table tracking rows: every change row names its row by id.

The ids must be those the JSON-and-pyarrow oracle of ``tests/interop/row_ids.py`` finds in
the files: a new image (insert, postimage) among the physical rows of its own version,
an old one (preimage, delete) among those of the version before, with the commit version
the oracle gives that row there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.row_ids import physical_rows
from tests.magics import cell, ip  # noqa: F401  (the ip fixture)

pytestmark = pytest.mark.spark

TRACKED = "'delta.enableRowTracking' = 'true', 'delta.enableChangeDataFeed' = 'true'"
STATEMENTS = [
    "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",  # v1
    "UPDATE t SET v = v || '!' WHERE id = 2",  # v2
    "DELETE FROM t WHERE id = 3",  # v3
    "MERGE INTO t USING (SELECT * FROM VALUES (1, 'm'), (9, 'n'), (8, 'n') AS s(id, v)) s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",  # v4
    "MERGE INTO t USING (SELECT 4 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",  # v5
    "INSERT INTO t VALUES (10, 'x')",  # v6
]
NEW_IMAGES = ("insert", "update_postimage")
Change = tuple[Any, ...]  # id, v, change type, commit version, row id, row commit version


def _changes(df: Any) -> list[Change]:
    columns = ("id", "v", "_change_type", "_commit_version", "_row_id", "_row_commit_version")
    return sorted(tuple(r) for r in df.select(*columns).collect())


def _check_against_oracle(location: str, changes: list[Change]) -> None:
    for key, value, kind, version, row_id, row_version in changes:
        seen = version if kind in NEW_IMAGES else version - 1
        assert (key, value, row_id, row_version) in physical_rows(location, seen), (key, kind)
        if kind in NEW_IMAGES:
            assert row_version == version
    # Both images of one update share the id; no two rows of one version share one.
    for version in {c[3] for c in changes}:
        here = [c for c in changes if c[3] == version]
        pre = {c[0]: c[4] for c in here if c[2] == "update_preimage"}
        post = {c[0]: c[4] for c in here if c[2] == "update_postimage"}
        assert pre == post
        for kind in ("insert", "delete", "update_postimage"):
            ids = [c[4] for c in here if c[2] == kind]
            assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("dvs", ["true", "false"])
def test_changes_name_rows_by_id(spark: Any, tmp_path: Path, dvs: str) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        f"CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ({TRACKED}, "
        f"'delta.enableDeletionVectors' = '{dvs}')"
    )
    for statement in STATEMENTS:
        s.sql(statement)
    location = s.table("t").location
    changes = _changes(s.sql("SELECT * FROM table_changes('t', 1)").df)
    assert None not in {c[4] for c in changes} | {c[5] for c in changes}
    _check_against_oracle(location, changes)
    kinds = {(c[0], c[2], c[3]) for c in changes}
    assert {(2, "update_preimage", 2), (2, "update_postimage", 2), (3, "delete", 3)} <= kinds
    assert {(1, "update_postimage", 4), (9, "insert", 4), (4, "delete", 5)} <= kinds
    assert (10, "insert", 6) in kinds
    # A row keeps its id from its insert to its update: row 2's ids at v1 and v2 agree.
    ids = {(c[0], c[2], c[3]): c[4] for c in changes}
    assert ids[(2, "insert", 1)] == ids[(2, "update_postimage", 2)]
    assert ids[(1, "insert", 1)] == ids[(1, "update_preimage", 4)]
    # The Python API has the same columns.
    assert _changes(s.table("t").changes(1)) == changes
    # The ids in the change files are hidden from readers that do not know them.
    assert _deltalake_changes(location) == sorted(c[:4] for c in changes)


def _deltalake_changes(location: str) -> list[Change]:
    import pyarrow as pa
    from deltalake import DeltaTable

    table = pa.table(DeltaTable(location).load_cdf(starting_version=1).read_all())
    assert not [c for c in table.column_names if c.startswith("_row")]
    rows = table.to_pylist()
    return sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in rows)


def test_statements_of_one_transaction(spark: Any, tmp_path: Path) -> None:
    # One commit with change files holding an insert, a DV delete and an update: the
    # inserted rows get their ids only at the commit, from the files it added.
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(f"CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ({TRACKED})")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    with s.transaction() as tx:
        tx.sql("INSERT INTO t VALUES (4, 'd'), (5, 'e'), (6, 'e')")
        tx.sql("DELETE FROM t WHERE id = 1")
        tx.sql("UPDATE t SET v = 'B' WHERE id = 2")
    changes = _changes(s.table("t").changes(2))
    kinds = {(c[0], c[2]) for c in changes}
    assert kinds >= {(4, "insert"), (1, "delete"), (2, "update_postimage")}
    _check_against_oracle(s.table("t").location, changes)
    assert None not in {c[4] for c in changes}


def test_untracked_table_has_no_row_id(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    s.sql("INSERT INTO t VALUES (1, 'a')")
    s.sql("UPDATE t SET v = 'b'")
    columns = s.sql("SELECT * FROM table_changes('t', 0)").df.columns
    assert "_row_id" not in columns and "_row_commit_version" not in columns
    assert columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]


def test_magic_shows_row_ids(ip: Any) -> None:  # noqa: F811
    cell(ip, f"CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ({TRACKED})")
    cell(ip, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    cell(ip, "UPDATE t SET v = 'x' WHERE id = 2")
    result = cell(ip, "SELECT id, _change_type, _row_id FROM table_changes('t', 1) ORDER BY 1, 2")
    rows = [tuple(r) for r in result.df.collect()]
    assert [r[:2] for r in rows] == [
        (1, "insert"),
        (2, "insert"),
        (2, "update_postimage"),
        (2, "update_preimage"),
    ]
    assert rows[1][2] == rows[2][2] == rows[3][2] != rows[0][2]
