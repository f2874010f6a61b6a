"""The multi-table crash child of ``multi_crash_writer``, on an object store (no Spark).

``python -m tests.txn.s3_crash_writer s3://BUCKET/WAREHOUSE MODE`` with MODE ``create``,
``transfer`` or ``touch``, as in :mod:`tests.txn.multi_crash_writer`: three enrolled tables
t0, t1, t2 with a row (id 0, amount 100) each; one group adding a row (id 1) whose amounts
sum to zero; a later single-table commit to t0 (id 2, amount 0) that rolls the
coordinator forward. Data files go through txsql's own FileIO, so the store is reached
with the ``AWS_*`` settings of the environment (the test points them at moto).
``TXSQL_CRASH_AT`` kills the process at a coordinator phase.
"""

from __future__ import annotations

import json
import sys

from tests.txn.multi_crash_writer import TABLES, TRANSFER
from tests.txn.transfer_writer import write_rows
from txsql.log import features
from txsql.log.actions import Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction, commit_together

COLUMNS = ("id", "amount")
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": c, "type": "long", "nullable": False, "metadata": {}} for c in COLUMNS],
    }
)


def create(warehouse: str) -> None:
    for name in TABLES:
        log = DeltaLog.for_path(f"{warehouse}/{name}")
        metadata = Metadata(
            id=f"id-{name}",
            schema_string=SCHEMA,
            configuration={features.MULTI_TABLE_PROPERTY: "true"},
        )
        with Transaction(log) as txn:
            txn.stage([features.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
            txn.stage([write_rows(log.table_root, COLUMNS, [(0, 100)])])
            txn.commit("CREATE TABLE")


def transfer(warehouse: str) -> None:
    entries = []
    for name in TABLES:
        txn = Transaction(DeltaLog.for_path(f"{warehouse}/{name}"))
        txn.stage([write_rows(txn.table_root, COLUMNS, [(1, TRANSFER[name])])])
        entries.append((txn, txn.commit_loop("WRITE")))
    commit_together(entries, list(TABLES))


def touch(warehouse: str) -> None:
    txn = Transaction(DeltaLog.for_path(f"{warehouse}/t0"))
    txn.stage([write_rows(txn.table_root, COLUMNS, [(2, 0)])])
    txn.commit("WRITE")


if __name__ == "__main__":
    modes = {"create": create, "transfer": transfer, "touch": touch}
    modes[sys.argv[2]](sys.argv[1])
    print("done", flush=True)
