"""Stable row ids (``delta.enableRowTracking = true``) through every statement that copies rows.

A row's id and commit version (PROTOCOL.md "Row Tracking") are its file's ``baseRowId`` +
physical row index and ``defaultRowCommitVersion``, unless the file materializes them in
the hidden columns the table's configuration names. UPDATE, MERGE, copy-on-write DELETE,
OPTIMIZE, REORG PURGE and a REPLACE WHERE overwrite move rows into new files: each row must
keep its id, and its commit version must be the version that last changed it.

After every statement the oracle (``tests/interop/row_ids.py``: the JSON log and pyarrow,
no txsql code) must find txsql's live rows with their ids among the table's physical rows,
and DuckDB's delta extension must return the same live rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.row_ids import Lineage, lineage
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("dvs", [True, False], ids=["deletion-vectors", "copy-on-write"])
def test_every_copy_keeps_its_row_id(spark: Any, tmp_path: Path, dvs: bool) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
        f"'delta.enableDeletionVectors' = '{str(dvs).lower()}')"
    )
    location = str(tmp_path / "wh" / "t")
    s.sql("INSERT INTO t SELECT id, 'a' FROM range(1, 7)")
    s.sql("INSERT INTO t SELECT id, 'b' FROM range(7, 10)")
    _, before = lineage(spark, location)
    assert sorted(before) == list(range(1, 10))

    def unchanged(after: Lineage, keys: set[int]) -> None:
        assert {k: after[k] for k in keys} == {k: before[k] for k in keys}

    s.sql("UPDATE t SET v = 'u' WHERE id IN (2, 7)")
    version, after = lineage(spark, location)
    assert {after[k] for k in (2, 7)} == {(before[2][0], version), (before[7][0], version)}
    unchanged(after, set(before) - {2, 7})
    before = after

    s.sql(
        "MERGE INTO t USING (SELECT * FROM VALUES (3, 'upd'), (4, 'del'), (10, 'new') "
        "AS s(id, op)) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'del' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'n')"
    )
    version, after = lineage(spark, location)
    assert 4 not in after and after[3] == (before[3][0], version)
    assert after[10][1] == version and after[10][0] > max(r for r, _ in before.values())
    unchanged(after, set(before) - {3, 4})
    before = after

    s.sql("DELETE FROM t WHERE id = 5")
    _, after = lineage(spark, location)
    unchanged(after, set(before) - {5})
    before = after

    s.sql("INSERT INTO t REPLACE WHERE id = 6 SELECT 6 AS id, 'r' AS v")
    version, after = lineage(spark, location)
    assert after[6][1] == version  # a new row: a fresh id and this version
    unchanged(after, set(before) - {6})
    before = after

    s.sql("OPTIMIZE t")
    _, after = lineage(spark, location)
    unchanged(after, set(before))
    if dvs:
        s.sql("DELETE FROM t WHERE id = 9")
        s.sql("REORG TABLE t APPLY (PURGE)")
        _, after = lineage(spark, location)
        unchanged(after, set(before) - {9})
    info = DeltaLog.for_path(location).read_commit(version)[0]
    assert info.extra is not None and info.extra["tags"]["delta.rowTracking.preserved"] == "true"


def test_conflict_names_rows_by_id(spark: Any, tmp_path: Path) -> None:
    """Two UPDATEs of the same row: the loser's conflict (and its card) name the row by its
    stable id, the id the oracle computes."""
    from txsql.errors import CommitConflictError
    from txsql.magics.conflict import ConflictCard

    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
        "'delta.enableDeletionVectors' = 'true')"
    )
    s.sql("INSERT INTO t SELECT id, 'a' FROM range(1, 7)")
    _, ids = lineage(spark, str(tmp_path / "wh" / "t"))
    loser = s.begin()
    loser.sql("UPDATE t SET v = 'mine' WHERE id = 4")
    s.sql("UPDATE t SET v = 'theirs' WHERE id = 4")
    with pytest.raises(CommitConflictError) as conflict:
        loser.commit()
    details = list(conflict.value.row_details)
    assert [d["row_id"] for d in details] == [ids[4][0]]
    table = ConflictCard(conflict.value).rows_table()
    assert table is not None and "row_id" in [c.name for c in table[0]]
