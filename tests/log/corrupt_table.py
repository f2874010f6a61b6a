"""A small real Delta table on disk, written through txsql's commit loop, for damage tests.

Version ``v`` appends one Parquet file holding ``v + 2`` ids (so every commit has a
distinct size); ``delta.checkpointInterval`` is 3, so checkpoints land at 3 and 6, and the
commit loop writes a ``.crc`` after every commit. ``rows_at(v)`` is the ground truth: the
ids written by commits ``0..v``, computed from what the test wrote, not from the log.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction

LATEST = 8
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)


def ids_of(version: int) -> list[int]:
    """The ids commit ``version`` appends."""
    return [version * 100 + i for i in range(version + 2)]


def rows_at(version: int) -> list[int]:
    return sorted(i for v in range(version + 1) for i in ids_of(v))


def data_file(root: Path, ids: list[int]) -> AddFile:
    name = f"part-{uuid.uuid4().hex}.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / name)
    stats = json.dumps(
        {
            "numRecords": len(ids),
            "minValues": {"id": min(ids)},
            "maxValues": {"id": max(ids)},
            "nullCount": {"id": 0},
        }
    )
    return AddFile(name, {}, (root / name).stat().st_size, 0, stats=stats)


def append(root: Path, ids: list[int]) -> int:
    """Commit one file of ``ids`` through a fresh transaction; return its version."""
    txn = Transaction(DeltaLog.for_path(str(root)))
    txn.snapshot()
    txn.stage([data_file(root, ids)])
    return txn.commit("WRITE", {"mode": "Append"}).version


def build_table(root: Path) -> None:
    """Versions 0..LATEST as described in the module docstring."""
    root.mkdir(parents=True, exist_ok=True)
    txn = Transaction(DeltaLog.for_path(str(root)))
    config = {"delta.checkpointInterval": "3"}
    txn.stage(
        [
            Protocol(1, 2),
            Metadata(str(uuid.uuid4()), SCHEMA, configuration=config, created_time=0),
            data_file(root, ids_of(0)),
        ]
    )
    txn.commit("CREATE TABLE")
    for v in range(1, LATEST + 1):
        assert append(root, ids_of(v)) == v


def read_ids(log: DeltaLog, version: int | None = None) -> list[int]:
    """The ids of a snapshot, read from its data files with pyarrow (no DVs are used)."""
    snap = log.snapshot(version)
    root = Path(log.table_root)
    out: list[int] = []
    for f in snap.files:
        out.extend(pq.read_table(root / f.path).column("id").to_pylist())
    return sorted(out)


def log_file(root: Path, name: str | int, suffix: str = "json") -> Path:
    if isinstance(name, int):
        name = f"{name:020d}.{suffix}"
    return root / "_delta_log" / name


def commit_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").glob("*.json"))
