"""Stable row ids (``delta.enableRowTracking = true``) through every statement that copies rows.

A row's id and commit version (PROTOCOL.md "Row Tracking") are its file's ``baseRowId`` +
physical row index and ``defaultRowCommitVersion``, unless the file materializes them in
the hidden columns the table's configuration names. UPDATE, MERGE, copy-on-write DELETE,
OPTIMIZE, REORG PURGE and a REPLACE WHERE overwrite move rows into new files: each row must
keep its id, and its commit version must be the version that last changed it.

The oracle reads the log's JSON commits and the data files with pyarrow, sharing no code
with txsql: every physical row's (id, value, row id, commit version) computed by the
protocol's rule. txsql's live rows with their ids must be among them, and DuckDB's delta
extension must return the same live rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.engine.scan import scan_snapshot
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark

Lineage = dict[int, tuple[int, int]]  # id -> (row id, row commit version)


def physical_rows(location: str, version: int) -> set[tuple[Any, ...]]:
    """Every physical row of the files live at ``version``, with its row id and commit
    version by the protocol's rule, from the JSON commits and pyarrow alone."""
    live: dict[str, dict[str, Any]] = {}
    configuration: dict[str, str] = {}
    for v in range(version + 1):
        with open(os.path.join(location, "_delta_log", f"{v:020d}.json")) as f:
            for line in f:
                action = json.loads(line)
                if "metaData" in action:
                    configuration = action["metaData"]["configuration"]
                elif "add" in action:
                    live[action["add"]["path"]] = action["add"]
                elif "remove" in action:
                    live.pop(action["remove"]["path"], None)
    id_column = configuration["delta.rowTracking.materializedRowIdColumnName"]
    version_column = configuration["delta.rowTracking.materializedRowCommitVersionColumnName"]
    rows = set()
    for path, add in live.items():
        table = pq.read_table(os.path.join(location, path))
        names = table.column_names
        ids = table.column("id").to_pylist()
        values = table.column("v").to_pylist()
        row_ids = table.column(id_column).to_pylist() if id_column in names else [None] * len(ids)
        versions = table.column(version_column).to_pylist() if version_column in names else None
        for index, (key, value, row_id) in enumerate(zip(ids, values, row_ids)):
            kept_version = versions[index] if versions is not None else None
            rows.add(
                (
                    key,
                    value,
                    add["baseRowId"] + index if row_id is None else row_id,
                    add["defaultRowCommitVersion"] if kept_version is None else kept_version,
                )
            )
    return rows


def lineage(spark: Any, location: str) -> tuple[int, Lineage]:
    """txsql's live rows with their stable ids, checked against the oracle and DuckDB."""
    snapshot = DeltaLog.for_path(location).snapshot()
    id_column = snapshot.configuration["delta.rowTracking.materializedRowIdColumnName"]
    version_column = snapshot.configuration[
        "delta.rowTracking.materializedRowCommitVersionColumnName"
    ]
    df = scan_snapshot(spark, snapshot, with_row_ids=True, with_lineage=True)
    selected = df.select("id", "v", f"`{id_column}`", f"`{version_column}`")
    rows = [tuple(r) for r in selected.collect()]
    assert set(rows) <= physical_rows(location, snapshot.version)
    assert len({r[2] for r in rows}) == len(rows), "two live rows share a row id"
    assert duckdb_rows(location, snapshot.version, "id, v") == sorted(r[:2] for r in rows)
    return snapshot.version, {r[0]: (r[2], r[3]) for r in rows}


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
