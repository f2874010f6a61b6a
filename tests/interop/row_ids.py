"""An oracle for stable row ids (PROTOCOL.md "Row Tracking") that shares no code with txsql:
the log's JSON commits read with :mod:`json`, the data files with pyarrow."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow.parquet as pq

from tests.interop.readers import duckdb_rows
from txsql.engine.scan import scan_snapshot
from txsql.log.deltalog import DeltaLog

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
    """txsql's live rows of a table (id, v) with their stable ids, checked against the
    oracle and DuckDB."""
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
