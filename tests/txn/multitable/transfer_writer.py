"""A child process for the multi-table transfers test (no Spark: txsql's Python API).

``python -m tests.txn.multitable.transfer_writer WAREHOUSE create``: two enrolled tables,
``accounts`` (one data file per account, each balance 100) and an empty ``ledger``.
``... WAREHOUSE run CHILD K ISOLATION``: K transfers, each one transaction over both tables:
read the source and destination accounts, move a third of the source's balance (rounded
up), rewrite both accounts' files and append the ledger row ``(child, seq, src, dst,
amount)``. The amount depends on what was read, so a lost update or a stale read would
show in a serial replay. A conflict is retried (bounded) with fresh transactions. Each
committed transfer is printed as one JSON line with both tables' new versions.
``... WAREHOUSE until STOP_FILE CHILD ISOLATION [PAUSE_S]``: transfers until STOP_FILE
exists; with PAUSE_S, each group waits that long between publishing ``accounts`` and
``ledger`` (a slow store), which widens the window in which an outside reader sees half
a transfer: what the read point test needs a reader to hit.
"""

from __future__ import annotations

import io
import json
import os
import random
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from txsql.errors import CommitConflictError, CommitRetriesExceededError
from txsql.log import features, protocol_upgrade
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.crashpoints import crash_point
from txsql.storage.factory import file_io_for
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable import publish
from txsql.txn.transaction import Transaction, commit_together

ACCOUNTS = 4
OPENING_BALANCE = 100
MAX_TRIES = 60


def _schema(*columns: str) -> str:
    fields = [{"name": c, "type": "long", "nullable": False, "metadata": {}} for c in columns]
    return json.dumps({"type": "struct", "fields": fields})


ACCOUNT_COLUMNS = ("id", "balance")
LEDGER_COLUMNS = ("child", "seq", "src", "dst", "amount")


def write_rows(table_root: str, columns: tuple[str, ...], rows: list[tuple[int, ...]]) -> AddFile:
    """One parquet file of ``rows`` in the table's directory (on any store txsql serves)."""
    name = f"part-{uuid.uuid4().hex}.parquet"
    data = pa.table({c: pa.array([r[i] for r in rows], pa.int64()) for i, c in enumerate(columns)})
    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    payload = buffer.getvalue()
    file_io_for(table_root).write(f"{table_root}/{name}", payload)
    return AddFile(name, {}, len(payload), 0, stats=json.dumps({"numRecords": len(rows)}))


def read_rows(table_root: str, path: str) -> list[dict[str, int]]:
    data = file_io_for(table_root).read(f"{table_root}/{path}")
    return pq.read_table(io.BytesIO(data)).to_pylist()


def create(warehouse: str) -> None:
    for name, columns in (("accounts", ACCOUNT_COLUMNS), ("ledger", LEDGER_COLUMNS)):
        log = DeltaLog.for_path(f"{warehouse}/{name}")
        metadata = Metadata(
            id=f"id-{name}",
            schema_string=_schema(*columns),
            configuration={features.MULTI_TABLE_PROPERTY: "true"},
        )
        with Transaction(log) as txn:
            txn.stage([protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
            if name == "accounts":
                for account in range(ACCOUNTS):
                    txn.stage([write_rows(log.table_root, columns, [(account, OPENING_BALANCE)])])
            txn.commit("CREATE TABLE")


def transfer_once(
    warehouse: str, isolation: IsolationLevel, child: int, seq: int, src: int, dst: int
) -> dict[str, int]:
    """One attempt; raises a conflict error when another transfer got there first."""
    accounts = Transaction(DeltaLog.for_path(f"{warehouse}/accounts"), isolation=isolation)
    ledger = Transaction(DeltaLog.for_path(f"{warehouse}/ledger"), isolation=isolation)
    snapshot = accounts.snapshot()
    assert snapshot is not None
    files = {}
    for f in snapshot.files:
        (row,) = read_rows(accounts.table_root, f.path)
        files[row["id"]] = (f, row["balance"])
    (src_file, src_balance), (dst_file, dst_balance) = files[src], files[dst]
    accounts.mark_files_read([src_file.path, dst_file.path])
    amount = (src_balance + 2) // 3
    accounts.stage([src_file.to_remove(), dst_file.to_remove()])
    accounts.stage(
        [
            write_rows(accounts.table_root, ACCOUNT_COLUMNS, [(src, src_balance - amount)]),
            write_rows(accounts.table_root, ACCOUNT_COLUMNS, [(dst, dst_balance + amount)]),
        ]
    )
    ledger.stage([write_rows(ledger.table_root, LEDGER_COLUMNS, [(child, seq, src, dst, amount)])])
    results = commit_together(
        [(accounts, accounts.commit_loop("UPDATE")), (ledger, ledger.commit_loop("WRITE"))],
        ["accounts", "ledger"],
    )
    return {
        "child": child,
        "seq": seq,
        "src": src,
        "dst": dst,
        "amount": amount,
        "accounts_version": results[0].version,
        "ledger_version": results[1].version,
    }


def transfer(
    warehouse: str, isolation: IsolationLevel, child: int, seq: int, pick: random.Random
) -> None:
    """One transfer, retried on conflicts; prints what committed (or that it gave up)."""
    src, dst = pick.sample(range(ACCOUNTS), 2)
    for tries in range(1, MAX_TRIES + 1):
        try:
            done = transfer_once(warehouse, isolation, child, seq, src, dst)
        except (CommitConflictError, CommitRetriesExceededError):
            continue
        print(json.dumps({**done, "tries": tries}), flush=True)
        return
    print(json.dumps({"child": child, "seq": seq, "gave_up": True}), flush=True)


def run(warehouse: str, child: int, count: int, isolation: IsolationLevel) -> None:
    pick = random.Random(child)
    for seq in range(count):
        transfer(warehouse, isolation, child, seq, pick)


def slow_publish(pause_s: float) -> None:
    """Pause between a group's first and second publish (crash points stay live)."""

    def point(phase: str) -> None:
        if phase == "mtx_published_1":
            time.sleep(pause_s)
        crash_point(phase)

    publish.crash_point = point


def run_until(warehouse: str, stop_file: str, child: int, isolation: IsolationLevel) -> None:
    pick = random.Random(child)
    seq = 0
    while not os.path.exists(stop_file):
        transfer(warehouse, isolation, child, seq, pick)
        seq += 1


if __name__ == "__main__":
    if sys.argv[2] == "create":
        create(sys.argv[1])
    elif sys.argv[2] == "until":
        if len(sys.argv) > 6:
            slow_publish(float(sys.argv[6]))
        run_until(sys.argv[1], sys.argv[3], int(sys.argv[4]), IsolationLevel.parse(sys.argv[5]))
    else:
        level = IsolationLevel.parse(sys.argv[5])
        run(sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), level)
