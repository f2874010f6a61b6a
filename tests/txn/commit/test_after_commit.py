"""Every commit path runs the same after-commit hooks, COMMIT PREPARED included.

A table written only by COMMIT PREPARED (a two-phase streaming sink) must get its
checkpoints, its expired log cleaned and what killed writers left removed, as an autocommit
write does. No Spark: the tables are written with the transaction API; DuckDB and
deltalake (sharing no code with txsql) read the result.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.txn.multitable.multi_crash_writer import SCHEMA, data_file
from txsql.log import features, protocol_upgrade
from txsql.log.actions import Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.paths import join
from txsql.storage.written import record_written, recording
from txsql.txn.multitable.coordinator import COORDINATOR_DIR, coordinator_at
from txsql.txn.prepared.decide import commit_prepared
from txsql.txn.prepared.prepare import prepare_transactions
from txsql.txn.transaction import Transaction

LONG_AGO = time.time() - 7 * 24 * 3600
CONFIG = {
    features.MULTI_TABLE_PROPERTY: "true",
    "delta.checkpointInterval": "2",
    "delta.logRetentionDuration": "interval 1 second",
}


def _create(log: DeltaLog) -> None:
    metadata = Metadata(id="sink", schema_string=SCHEMA, configuration=CONFIG)
    with Transaction(log) as txn:
        txn.stage([protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
        txn.commit("CREATE TABLE")


def _prepare_and_commit(log: DeltaLog, warehouse: Path, row_id: int) -> None:
    txn = Transaction(log)
    with recording(txn.written):
        add = data_file(log, row_id, 10 * row_id)
        record_written(join(log.table_root, add.path))
    txn.stage([add])
    prepare_transactions([(txn, txn.commit_loop("WRITE"))], ["sink"], f"batch-{row_id}")
    commit_prepared(coordinator_at(str(warehouse / COORDINATOR_DIR)), f"batch-{row_id}", 10)


def _age(directory: Path) -> None:
    for path in directory.iterdir():
        if path.name[:20].isdigit():
            os.utime(path, (LONG_AGO, LONG_AGO))


def test_a_table_written_only_by_commit_prepared_gets_its_log_cleaned(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    log = DeltaLog.for_path(str(warehouse / "sink"))
    _create(log)
    log_dir = Path(log.store.log_dir)
    _prepare_and_commit(log, warehouse, 1)
    _prepare_and_commit(log, warehouse, 2)  # version 2: a checkpoint, nothing expired yet
    assert (log_dir / f"{2:020d}.checkpoint.parquet").exists()
    assert (log_dir / f"{0:020d}.json").exists()
    _age(log_dir)
    # A temp file of a writer killed between its temp commit file and the link.
    stale_temp = log_dir / f".{9:020d}.json.{'a' * 32}.tmp"
    stale_temp.write_bytes(b"{}")
    os.utime(stale_temp, (LONG_AGO, LONG_AGO))
    _prepare_and_commit(log, warehouse, 3)
    assert not stale_temp.exists()  # leftovers go on every commit
    _prepare_and_commit(log, warehouse, 4)  # version 4: a checkpoint; before 2 expires
    names = {p.name for p in log_dir.iterdir()}
    assert f"{0:020d}.json" not in names and f"{1:020d}.json" not in names
    assert f"{2:020d}.checkpoint.parquet" in names and f"{4:020d}.checkpoint.parquet" in names
    assert all(f"{v:020d}.crc" in names for v in (2, 3, 4))
    expected = [(i, 10 * i) for i in range(1, 5)]
    assert duckdb_rows(log.table_root, 4, "id, amount") == expected
    assert deltalake_rows(log.table_root, 4, "id, amount") == expected
