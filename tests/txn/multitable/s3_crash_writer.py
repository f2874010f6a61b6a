"""The multi-table crash child of ``multi_crash_writer``, on an object store (no Spark).

``python -m tests.txn.multitable.s3_crash_writer s3://BUCKET/WAREHOUSE MODE`` with MODE ``create``,
``transfer`` or ``touch``, run by :mod:`tests.txn.multitable.multi_crash_writer`'s own functions:
three enrolled tables t0, t1, t2 with a row (id 0, amount 100) each; one group adding a
row (id 1) whose amounts sum to zero; a later single-table commit to t0 (id 2, amount 0)
that rolls the coordinator forward. Data files go through txsql's own FileIO, so the store
is reached with the ``AWS_*`` settings of the environment (the test points them at moto).
``TXSQL_CRASH_AT`` kills the process at a coordinator phase; a third argument ``staged``
writes staged commit files instead of inline commits.
"""

from __future__ import annotations

import sys

from tests.txn.multitable import multi_crash_writer
from tests.txn.multitable.transfer_writer import write_rows
from txsql.log.actions import AddFile
from txsql.log.deltalog import DeltaLog


def store_data_file(log: DeltaLog, row_id: int, amount: int) -> AddFile:
    """The row's parquet file, written through txsql's FileIO (any store, moto included)."""
    return write_rows(log.table_root, ("id", "amount"), [(row_id, amount)])


if __name__ == "__main__":
    modes = {
        "create": multi_crash_writer.create,
        "transfer": multi_crash_writer.transfer,
        "touch": multi_crash_writer.touch,
    }
    multi_crash_writer.choose_commit_form(sys.argv[3:])
    modes[sys.argv[2]](sys.argv[1], write=store_data_file)
    print("done", flush=True)
