"""A child process for the prepared-transaction crash tests (no Spark).

``python -m tests.txn.prepared.prepared_crash_writer WAREHOUSE create``: three enrolled tables t0,
t1, t2 with one row each (id 0, amount 100), as :mod:`tests.txn.multitable.multi_crash_writer`.
``... prepare ID``: blind appends of one row (id 1) to each table, amounts summing to zero,
prepared under ID. The data files are recorded as the transaction's own (as txsql's
writers do), so a rollback may delete them.
``... commit ID`` / ``... rollback ID``: COMMIT PREPARED / ROLLBACK PREPARED.

``TXSQL_CRASH_AT`` kills the process at a phase (``prepare_staged_<k>``,
``prepared_recorded``, ``prepared_ratified``, ``mtx_published_<k>``,
``prepared_rollback_decided``).
"""

from __future__ import annotations

import sys

from tests.txn.multitable.multi_crash_writer import TABLES, TRANSFER, create, data_file
from txsql.log.deltalog import DeltaLog
from txsql.storage.paths import join
from txsql.storage.written import record_written, recording
from txsql.txn.multitable.coordinator import COORDINATOR_DIR, coordinator_at
from txsql.txn.prepared.decide import commit_prepared, rollback_prepared
from txsql.txn.prepared.prepare import prepare_transactions
from txsql.txn.transaction import Transaction


def prepare(warehouse: str, prepared_id: str) -> None:
    entries = []
    for name in TABLES:
        txn = Transaction(DeltaLog.for_path(f"{warehouse}/{name}"))
        with recording(txn.written):
            add = data_file(txn.log, 1, TRANSFER[name])
            record_written(join(txn.log.table_root, add.path))
        txn.stage([add])
        entries.append((txn, txn.commit_loop("WRITE")))
    prepare_transactions(entries, list(TABLES), prepared_id)


def coordinator(warehouse: str):  # type: ignore[no-untyped-def]
    return coordinator_at(f"{warehouse}/{COORDINATOR_DIR}")


if __name__ == "__main__":
    warehouse, mode = sys.argv[1], sys.argv[2]
    if mode == "create":
        create(warehouse)
    elif mode == "prepare":
        prepare(warehouse, sys.argv[3])
    elif mode == "commit":
        print(commit_prepared(coordinator(warehouse), sys.argv[3], 100).message)
    else:
        print(rollback_prepared(coordinator(warehouse), sys.argv[3]).message)
    print("done", flush=True)
