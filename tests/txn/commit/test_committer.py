"""Two OS processes appending to one table: put-if-absent must make every commit land once."""

from __future__ import annotations

import json
import multiprocessing.synchronize
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.txn.processes import run_together
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction

APPENDS_PER_WRITER = 200
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "writer", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "seq", "type": "integer", "nullable": False, "metadata": {}},
    ],
}


def _append_many(root: str, writer: int, start: multiprocessing.synchronize.Event) -> None:
    log = DeltaLog.for_path(root)
    start.wait()
    for seq in range(APPENDS_PER_WRITER):
        name = f"w{writer}-{seq:04d}.parquet"
        pq.write_table(pa.table({"writer": [writer], "seq": [seq]}), os.path.join(root, name))
        stats = {
            "numRecords": 1,
            "minValues": {"writer": writer, "seq": seq},
            "maxValues": {"writer": writer, "seq": seq},
            "nullCount": {"writer": 0, "seq": 0},
        }
        add = AddFile(
            name, {}, os.path.getsize(os.path.join(root, name)), 0, stats=json.dumps(stats)
        )
        with Transaction(log) as txn:
            txn.stage([add])
            txn.commit("WRITE", {"mode": "Append"})


@pytest.mark.slow
@pytest.mark.usefixtures("spawnable_main")
def test_two_processes_append_200_times_each(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    log = DeltaLog.for_path(root)
    with Transaction(log) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="mp", schema_string=json.dumps(SCHEMA))])
        txn.commit("CREATE TABLE")

    run_together(_append_many, [(root, w) for w in (1, 2)], timeout=600)

    total = 2 * APPENDS_PER_WRITER
    assert log.store.list_commits() == list(range(total + 1)), "contiguous versions 0..400"
    snapshot = DeltaLog.for_path(root).snapshot()
    assert snapshot.version == total
    rows: set[tuple[int, int]] = set()
    for f in snapshot.files:
        table = pq.read_table(os.path.join(root, f.path))
        rows.update(zip(table["writer"].to_pylist(), table["seq"].to_pylist()))
    expected = {(w, s) for w in (1, 2) for s in range(APPENDS_PER_WRITER)}
    assert rows == expected, "no append lost or duplicated"
    assert len(snapshot.files) == total
