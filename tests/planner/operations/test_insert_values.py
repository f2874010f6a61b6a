"""INSERT ... VALUES writes one file per partition, read back by DuckDB and deltalake."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.log.deltalog import DeltaLog
from txsql.session import Session

pytestmark = pytest.mark.spark

ROWS = [(i, f"name-{i}" if i % 3 else None, "a" if i < 6 else "b") for i in range(10)]


def _values() -> str:
    def literal(value: Any) -> str:
        return "NULL" if value is None else repr(value) if isinstance(value, str) else str(value)

    return ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in ROWS)


def _adds(root: str, version: int) -> list[dict[str, Any]]:
    commit = Path(root, "_delta_log", f"{version:020d}.json").read_text().splitlines()
    return [json.loads(line)["add"] for line in commit if '"add"' in line]


@pytest.mark.parametrize("partitioned", [False, True])
def test_values_insert_is_one_file_per_partition_and_readable_by_others(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    session = Session(spark=spark, warehouse=str(tmp_path))
    partition = " PARTITIONED BY (p)" if partitioned else ""
    session.sql(f"CREATE TABLE t (id BIGINT NOT NULL, name STRING, p STRING){partition}")
    result = session.sql(f"INSERT INTO t VALUES {_values()}")
    assert result.metrics["num_inserted_rows"] == 10
    root = DeltaLog.for_path(os.path.join(str(tmp_path), "t")).table_root
    adds = _adds(root, 1)
    assert len(adds) == (2 if partitioned else 1), "one file per partition, not per core"
    assert sorted(json.loads(a["stats"])["numRecords"] for a in adds) == (
        [4, 6] if partitioned else [10]
    )
    expected = sorted(ROWS)
    assert duckdb_rows(root, 1, "id, name, p") == expected
    assert deltalake_rows(root, 1, "id, name, p") == expected
