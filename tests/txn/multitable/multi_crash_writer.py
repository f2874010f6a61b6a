"""A child process for the multi-table crash matrix (no Spark).

``python -m tests.txn.multitable.multi_crash_writer WAREHOUSE create``: three enrolled
tables t0, t1, t2, each with one row (id 0, amount 100).
``... transfer``: one group over the three tables; each gets a row (id 1) whose amounts
sum to zero (-10, +4, +6), so the sum over all tables stays 300 after a whole group.
``... transfers``: five such groups in a row (several processes run it at once).
``... touch``: a later txsql access: one single-table commit to t0 through the
coordinator (row id 2, amount 0), which first rolls forward whatever a crash left.

Data files are written with pyarrow and synced (``s3_crash_writer`` passes a writer for
object stores). ``TXSQL_CRASH_AT`` kills the process at a phase (``mtx_staged_<k>``,
``mtx_ratified``, ``mtx_published_<k>``, ``mtx_cleanup``). A third argument ``staged``
makes every participant write a staged commit file (these commits are small enough to ride
inline in the coordinator record otherwise).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from txsql.log import features, protocol_upgrade
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.durable import sync_files
from txsql.txn.multitable import group_commit
from txsql.txn.transaction import Transaction, commit_together

TABLES = ("t0", "t1", "t2")
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "amount", "type": "long", "nullable": False, "metadata": {}},
        ],
    }
)
TRANSFER = {"t0": -10, "t1": 4, "t2": 6}
# Writes one data file of the row (id, amount) into the log's table; returns its add.
DataFile = Callable[[DeltaLog, int, int], AddFile]


def data_file(log: DeltaLog, row_id: int, amount: int) -> AddFile:
    name = f"part-{uuid.uuid4().hex}.parquet"
    path = os.path.join(log.table_root, name)
    os.makedirs(log.table_root, exist_ok=True)
    table = pa.table(
        {"id": pa.array([row_id], pa.int64()), "amount": pa.array([amount], pa.int64())}
    )
    pq.write_table(table, path)
    sync_files([path])
    stats = json.dumps({"numRecords": 1})
    return AddFile(name, {}, os.path.getsize(path), 0, stats=stats)


def create(warehouse: str, write: DataFile = data_file) -> None:
    for name in TABLES:
        log = DeltaLog.for_path(f"{warehouse}/{name}")
        metadata = Metadata(
            id=f"id-{name}",
            schema_string=SCHEMA,
            configuration={features.MULTI_TABLE_PROPERTY: "true"},
        )
        with Transaction(log) as txn:
            txn.stage([protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
            txn.stage([write(log, 0, 100)])
            txn.commit("CREATE TABLE")


def transfer(warehouse: str, write: DataFile = data_file) -> None:
    entries = []
    for name in TABLES:
        txn = Transaction(DeltaLog.for_path(f"{warehouse}/{name}"))
        txn.stage([write(txn.log, 1, TRANSFER[name])])
        entries.append((txn, txn.commit_loop("WRITE")))
    commit_together(entries, list(TABLES))


def transfers(warehouse: str) -> None:
    """Five groups in a row (run by several processes at once: they race to ratify)."""
    for _ in range(5):
        transfer(warehouse)


def touch(warehouse: str, write: DataFile = data_file) -> None:
    txn = Transaction(DeltaLog.for_path(f"{warehouse}/t0"))
    txn.stage([write(txn.log, 2, 0)])
    txn.commit("WRITE")


def choose_commit_form(args: list[str]) -> None:
    """``staged`` among the arguments: no commit rides inline in a coordinator record."""
    if "staged" in args:
        group_commit.INLINE_MAX_BYTES = 0


if __name__ == "__main__":
    modes = {"create": create, "transfer": transfer, "transfers": transfers, "touch": touch}
    choose_commit_form(sys.argv[3:])
    modes[sys.argv[2]](sys.argv[1])
    print("done", flush=True)
