"""Tables that track row ids (``delta.enableRowTracking``), through SQL.

INSERT, DELETE (deletion vectors), insert-only MERGE and TRUNCATE keep every row's id
(statements that copy rows: ``test_stable_row_ids.py``); with the property off, copies
get fresh ids and the commit says so. DuckDB's delta extension and deltalake, which share
no code with txsql, read every version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.interop.row_ids import lineage
from txsql.log import row_tracking
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot

pytestmark = pytest.mark.spark


def _ids(snapshot: Snapshot) -> dict[str, tuple[int | None, int | None]]:
    return {f.path: (f.base_row_id, f.default_row_commit_version) for f in snapshot.files}


def _agree(location: str, version: int, s: txsql.Session) -> list[tuple[Any, ...]]:
    ours = sorted(
        tuple(r) for r in s.sql(f"SELECT id, v FROM t VERSION AS OF {version}").df.collect()
    )
    assert duckdb_rows(location, version, "id, v") == ours
    assert deltalake_rows(location, version, "id, v") == ours
    return ours


def test_row_ids_through_sql(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES "
        "('delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')"
    )
    location = str(tmp_path / "wh" / "t")
    log = DeltaLog.for_path(location)
    created = log.snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(created.protocol.writer_features or ())
    conf = created.configuration
    assert conf[row_tracking.ROW_ID_COLUMN_PROPERTY].startswith("_row-id-col-")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    s.sql("INSERT INTO t VALUES (4, 'd'), (5, 'e')")
    after_inserts = log.snapshot()
    assert sorted(_ids(after_inserts).values()) == [(0, 1), (3, 2)]
    assert row_tracking.high_water_mark(after_inserts.domains.values()) == 4
    assert _agree(location, 2, s) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]

    s.sql("DELETE FROM t WHERE id = 2")  # a deletion vector: the file keeps its ids
    assert sorted(_ids(log.snapshot()).values()) == [(0, 1), (3, 2)]
    assert _agree(location, 3, s) == [(1, "a"), (3, "c"), (4, "d"), (5, "e")]

    s.sql(
        "MERGE INTO t USING (SELECT 9 AS id, 'z' AS v) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    merged = log.snapshot()
    assert max(b for b, _ in _ids(merged).values() if b is not None) == 5
    assert row_tracking.high_water_mark(merged.domains.values()) == 5
    assert _agree(location, 4, s)[-1] == (9, "z")

    # Not keeping stable ids any more: UPDATE runs, its new row gets a fresh id.
    s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableRowTracking' = 'false')")
    s.sql("UPDATE t SET v = 'x' WHERE id = 1")
    updated = log.snapshot()
    fresh = [b for b, v in _ids(updated).values() if v == updated.version]
    assert fresh == [6]
    info = log.read_commit(updated.version)[0]
    assert json.dumps(info.extra).count('"delta.rowTracking.preserved": "false"') == 1
    assert _agree(location, updated.version, s)[0] == (1, "x")


def test_enabling_on_a_table_with_rows_backfills_their_ids(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v STRING)")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    s.sql("INSERT INTO t VALUES (3, 'c')")
    s.sql("DELETE FROM t WHERE id = 2")  # a deletion vector the backfill keeps
    location = str(tmp_path / "wh" / "t")
    log = DeltaLog.for_path(location)
    before = {f.path: f for f in log.snapshot().files}
    s.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    enabled = log.snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(enabled.protocol.writer_features or ())
    # Every file committed again, unchanged but for its ids, in the ALTER's own commit.
    assert {f.path for f in enabled.files} == set(before)
    for f in enabled.files:
        assert f.deletion_vector == before[f.path].deletion_vector
        assert f.default_row_commit_version == enabled.version
    starts = sorted(f.base_row_id for f in enabled.files if f.base_row_id is not None)
    assert len(starts) == 2 and starts[0] == 0  # ranges of 2 physical rows and 1
    assert row_tracking.high_water_mark(enabled.domains.values()) == 2
    assert _agree(location, enabled.version, s) == [(1, "a"), (3, "c")]
    # The oracle checks each id is its file's baseRowId + row index; the backfill's version
    # is every row's commit version.
    _, ids = lineage(spark, location)
    assert {version for _, version in ids.values()} == {enabled.version}
    s.sql("UPDATE t SET v = 'x' WHERE id = 3")
    updated_version, after = lineage(spark, location)
    assert after[3] == (ids[3][0], updated_version) and after[1] == ids[1]
