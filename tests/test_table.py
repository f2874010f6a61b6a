"""A Table handle reads through the coordinator's roll forward, as statements do."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import txsql
from tests.interop.readers import deltalake_rows
from tests.txn.multitable.multi_crash_writer import TABLES
from tests.txn.multitable.test_coordinator_crashes import run_child


def test_a_table_handle_never_reads_half_a_ratified_group(tmp_path: Path, spark: Any) -> None:
    warehouse = tmp_path / "wh"
    assert run_child(warehouse, "create") == 0
    # Killed after the group was ratified, before any table was published.
    assert run_child(warehouse, "transfer", crash_at="mtx_ratified") == -signal.SIGKILL
    assert [i for i, _ in deltalake_rows(str(warehouse / "t1"), 0, "id, amount")] == [0]
    session = txsql.Session(spark, warehouse=str(warehouse))
    tables = [session.table(str(warehouse / name)) for name in TABLES]
    assert tables[0].version() == 1  # the read published the ratified group first
    for table in tables:
        ids = sorted(row["id"] for row in table.to_spark().collect())
        assert ids == [0, 1], table.name
    # An outside reader sees the published commits too (deltalake shares no code).
    for name in TABLES:
        rows = deltalake_rows(str(warehouse / name), 1, "id, amount")
        assert sorted(i for i, _ in rows) == [0, 1]
