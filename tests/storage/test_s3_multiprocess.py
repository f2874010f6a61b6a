"""Two OS processes committing to one log on S3 (moto): conditional PUTs lose no commit.

Small by default; TXSQL_S3_APPENDS raises the number of appends per writer.
"""

from __future__ import annotations

import json
import multiprocessing.synchronize
import os

import pytest

from tests.storage.moto_s3 import MotoS3
from tests.txn.processes import run_together
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.txn.transaction import Transaction

APPENDS = int(os.environ.get("TXSQL_S3_APPENDS", "12"))
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "w", "type": "integer", "nullable": True, "metadata": {}}],
    }
)


def _append(
    location: str, options: dict[str, str], writer: int, start: multiprocessing.synchronize.Event
) -> None:
    log = DeltaLog.for_path(location, options)
    start.wait()
    for seq in range(APPENDS):
        name = f"w{writer}-{seq:04d}.parquet"
        log.store.fs.write(f"{location}/{name}", b"x")  # a commit checks its files exist
        with Transaction(log) as txn:
            txn.stage([AddFile(name, {}, 1, 0)])
            txn.commit("WRITE", {"mode": "Append"})


@pytest.mark.usefixtures("spawnable_main")
def test_two_processes_commit_concurrently_on_s3(moto_s3: MotoS3, s3_bucket: str) -> None:
    location = f"s3://{s3_bucket}/t"
    options = moto_s3.options()
    log = DeltaLog.for_path(location, options)
    with Transaction(log) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="mp", schema_string=SCHEMA)])
        txn.commit("CREATE TABLE")

    run_together(_append, [(location, options, w) for w in (1, 2)], timeout=300)

    total = 2 * APPENDS
    assert log.store.list_commits() == list(range(total + 1)), "contiguous versions"
    snapshot = DeltaLog.for_path(location, options).snapshot()
    expected = {f"w{w}-{s:04d}.parquet" for w in (1, 2) for s in range(APPENDS)}
    assert {f.path for f in snapshot.files} == expected, "no commit lost or duplicated"
    # Every commit file holds exactly one of the appends (none overwritten by a loser).
    committed = [
        a.path for v in range(1, total + 1) for a in log.read_commit(v) if isinstance(a, AddFile)
    ]
    assert sorted(committed) == sorted(expected)
    assert any(k.endswith(".json") for k in moto_s3.keys(s3_bucket))
