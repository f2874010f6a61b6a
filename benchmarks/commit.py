"""Commit-path benchmarks (no Spark): conflict checking, commit throughput, row-level writers.

Run: ``python benchmarks/commit.py``. Prints, in one run on this machine:

1. the time to check one transaction against 100 winning commits (goal < 50 ms);
2. the throughput of tiny blind-append commits from one process (commits/s);
3. 4 writer processes each deleting different rows of the same data file through deletion
   vectors, with row-level concurrency on (goal: 0 % aborts) and off (Delta Spark's
   file-level rule, for comparison);
4. abort rates of a MERGE-heavy and a compaction-heavy mix, row-level next to file-level
   (``benchmarks/commit_mixes.py``; sizes through TXSQL_BENCH_MIX_COMMITS and
   TXSQL_BENCH_COMPACTIONS).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import tempfile
import time
from dataclasses import replace
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event

from commit_mixes import run_mix
from pyroaring import BitMap64

from txsql.dv.store import read_deletion_vector, write_deletion_vectors
from txsql.errors import CommitConflictError
from txsql.log.actions import AddFile, Metadata, Protocol, RemoveFile
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import Column, Comparison, Literal
from txsql.storage import LogStore, MemoryFileIO
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)
ROWS_PER_FILE = 1000
WRITERS = 4
COMMITS_PER_WRITER = 25


def _create(log: DeltaLog, row_level: bool) -> None:
    conf = {"delta.enableDeletionVectors": "true", "txsql.rowLevelConcurrency": str(row_level)}
    stats = json.dumps(
        {
            "numRecords": ROWS_PER_FILE,
            "minValues": {"id": 0},
            "maxValues": {"id": ROWS_PER_FILE - 1},
            "nullCount": {"id": 0},
        }
    )
    with Transaction(log) as txn:
        txn.stage(
            [
                Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
                Metadata(id="bench", schema_string=SCHEMA, configuration=conf),
                AddFile("data.parquet", {}, 1, 0, stats=stats),
            ]
        )
        txn.commit("CREATE TABLE")


def _tiny_add(i: int) -> AddFile:
    return AddFile(f"f{i}.parquet", {}, 1, 0, stats=json.dumps({"numRecords": 1}))


def conflict_check_ms() -> float:
    """One reader-writer transaction rebased over 100 winning blind appends."""
    timings = []
    for _ in range(5):
        log = DeltaLog(LogStore("/mem/c", MemoryFileIO()))
        _create(log, row_level=True)
        txn = Transaction(log)
        snapshot = txn.snapshot()
        assert snapshot is not None
        txn.record_scan(Comparison("=", Column("id"), Literal(-1)), list(snapshot.files), {})
        txn.stage([_tiny_add(10_000)])
        for i in range(100):
            with Transaction(log) as winner:
                winner.stage([_tiny_add(i)])
                winner.commit("WRITE")
        started = time.perf_counter()
        result = txn.commit("WRITE")
        timings.append((time.perf_counter() - started) * 1000)
        assert result.version == 101
    return statistics.median(timings)


def commit_throughput(root: str, commits: int = 300) -> float:
    log = DeltaLog.for_path(root)
    _create(log, row_level=True)
    started = time.perf_counter()
    for i in range(commits):
        with Transaction(log) as txn:
            txn.stage([_tiny_add(i)])
            txn.commit("WRITE")
    return commits / (time.perf_counter() - started)


def _delete_rows(root: str, writer: int, start: Event, results: Queue[int]) -> None:
    """Delete rows writer, writer + WRITERS, ... of the one file; report aborts."""
    log = DeltaLog.for_path(root)
    aborts = 0
    start.wait()
    for n in range(COMMITS_PER_WRITER):
        row = writer + WRITERS * n
        while True:
            txn = Transaction(log)
            snapshot = txn.snapshot()
            assert snapshot is not None
            add = snapshot.files[0]
            old = (
                read_deletion_vector(add.deletion_vector, root, log.store.fs)
                if add.deletion_vector
                else BitMap64()
            )
            (descriptor,) = write_deletion_vectors(root, log.store.fs, [old | BitMap64([row])])
            txn.record_scan(
                Comparison("=", Column("id"), Literal(row)), [add], {add.path: BitMap64([row])}
            )
            stats = json.loads(add.stats or "{}") | {"tightBounds": False}
            txn.stage(
                [
                    RemoveFile(
                        add.path,
                        deletion_timestamp=int(time.time() * 1000),
                        extended_file_metadata=True,
                        partition_values={},
                        size=add.size,
                        deletion_vector=add.deletion_vector,
                    ),
                    replace(add, deletion_vector=descriptor, stats=json.dumps(stats)),
                ]
            )
            try:
                txn.commit("DELETE")
                break
            except CommitConflictError:
                aborts += 1
    results.put(aborts)


def concurrent_writers(row_level: bool) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as root:
        _create(DeltaLog.for_path(root), row_level)
        ctx = multiprocessing.get_context("spawn")
        start, results = ctx.Event(), ctx.Queue()
        workers = [
            ctx.Process(target=_delete_rows, args=(root, w, start, results)) for w in range(WRITERS)
        ]
        for worker in workers:
            worker.start()
        time.sleep(2.0)  # let every worker import and block on the event
        started = time.perf_counter()
        start.set()
        aborts = sum(results.get(timeout=600) for _ in workers)
        elapsed = time.perf_counter() - started
        for worker in workers:
            worker.join()
        final = DeltaLog.for_path(root).snapshot()
        deleted = final.files[0].deletion_vector
        assert deleted is not None and deleted.cardinality == WRITERS * COMMITS_PER_WRITER
        return aborts, WRITERS * COMMITS_PER_WRITER, elapsed


def main() -> None:
    print(f"txsql commit benchmarks (cpu count {os.cpu_count()})")
    print(
        f"1. conflict check against 100 winning commits: {conflict_check_ms():.1f} ms "
        "(goal < 50 ms)"
    )
    with tempfile.TemporaryDirectory() as root:
        print(f"2. tiny blind-append commits, one process: {commit_throughput(root):.0f} commits/s")
    for row_level in (True, False):
        aborts, commits, elapsed = concurrent_writers(row_level)
        rate = 100 * aborts / (aborts + commits)
        mode = "row-level" if row_level else "file-level (Delta Spark rule)"
        print(
            f"3. {WRITERS} writers x {COMMITS_PER_WRITER} DV deletes on one file, {mode}: "
            f"{aborts} aborts / {commits} commits = {rate:.0f} % aborted, {elapsed:.1f} s"
        )
    for mix in ("MERGE-heavy", "compaction-heavy"):
        for row_level in (True, False):
            print(f"4. {run_mix(mix, row_level).line()}")


if __name__ == "__main__":
    main()
