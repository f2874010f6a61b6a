"""A writer process for the crash matrix: appends and DV deletes through txsql's commit path.

Run as ``python -m tests.crash_writer ROOT OPS SEED``. No Spark: data files are written
with pyarrow and synced like ``engine/write.py`` does (then passes the ``data_written``
crash point); deletes write real deletion-vector files. Every commit records in its
``operationMetrics`` how much it changed the ``amount`` column (``amountDelta``) and the
resulting table total (``amountTotal``), so the test can check the rows against the log.
After each commit the planner's log cleanup runs, as a statement does. Set
``TXSQL_CRASH_AT`` to die at a phase (see ``txsql.storage.crashpoints``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import uuid
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

from txsql.dv.store import read_deletion_vector, write_deletion_vectors
from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.durable import sync_files
from txsql.storage.filesystem import LocalFileIO
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "amount", "type": "long", "nullable": False, "metadata": {}},
        ],
    }
)
CONF = {
    "delta.enableDeletionVectors": "true",
    "delta.checkpointInterval": "3",
    "delta.logRetentionDuration": "interval 0 seconds",  # clean up after every checkpoint
}
PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def create_table(root: str) -> None:
    log = DeltaLog.for_path(root)
    with Transaction(log) as txn:
        txn.stage([PROTOCOL, Metadata(id="crash", schema_string=SCHEMA, configuration=CONF)])
        txn.commit("CREATE TABLE", {}, {"amountDelta": 0, "amountTotal": 0})


def running_total(log: DeltaLog, version: int) -> int:
    info = next(a for a in log.read_commit(version) if isinstance(a, CommitInfo))
    return int((info.operation_metrics or {})["amountTotal"])


def append(log: DeltaLog, rng: random.Random) -> None:
    snapshot = log.snapshot()
    total = running_total(log, snapshot.version)
    ids = [rng.randrange(1 << 40) for _ in range(rng.randint(1, 4))]
    amounts = [rng.randint(1, 100) for _ in ids]
    name = f"part-{uuid.uuid4().hex}.parquet"
    path = os.path.join(log.table_root, name)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "amount": amounts}), path)
    sync_files([path])
    crash_point("data_written")
    stats = json.dumps({"numRecords": len(ids)})
    add = AddFile(name, {}, os.path.getsize(path), 0, stats=stats)
    commit(log, [add], "WRITE", sum(amounts), total)


def delete_one_row(log: DeltaLog, rng: random.Random) -> None:
    snapshot = log.snapshot()
    total = running_total(log, snapshot.version)
    target = rng.choice(sorted(snapshot.files, key=lambda f: f.path))
    fs = LocalFileIO()
    amounts = pq.read_table(os.path.join(log.table_root, target.path))["amount"].to_pylist()
    deleted = BitMap64()
    if target.deletion_vector is not None:
        deleted = read_deletion_vector(target.deletion_vector, log.table_root, fs)
    live = [i for i in range(len(amounts)) if i not in deleted]
    if len(live) <= 1:
        actions: list = [target.to_remove()]
        delta = -sum(amounts[i] for i in live)
    else:
        row = rng.choice(live)
        (descriptor,) = write_deletion_vectors(log.table_root, fs, [deleted | BitMap64([row])])
        actions = [target.to_remove(), replace(target, deletion_vector=descriptor)]
        delta = -amounts[row]
    commit(log, actions, "DELETE", delta, total)


def commit(log: DeltaLog, actions: list, operation: str, delta: int, total: int) -> None:
    with Transaction(log) as txn:
        txn.stage(actions)
        txn.commit(operation, {}, {"amountDelta": delta, "amountTotal": total + delta})


def main(root: str, ops: int, seed: int) -> None:
    rng = random.Random(seed)
    log = DeltaLog.for_path(root)
    print("ready", flush=True)  # imports done: random kills from here hit real work
    for _ in range(ops):
        if not log.snapshot().files or rng.random() < 0.5:
            append(log, rng)
        else:
            delete_one_row(log, rng)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
