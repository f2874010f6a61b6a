"""Commit-path benchmarks (no Spark): conflict checking, commit throughput, row-level writers.

Run: ``python benchmarks/commit.py``. Prints, in one run on this machine:

1. the time to check one transaction against 100 winning commits (goal < 50 ms), in
   memory, on local disk and on an S3 API (moto's server, started on 127.0.0.1 in its own
   process, log in the temp dir);
2. the throughput of tiny blind-append commits from one process (commits/s), local disk
   next to the S3 API (TXSQL_BENCH_S3=0 skips the S3 rows);
3. 4 writer processes each deleting different rows of the same data file through deletion
   vectors, with row-level concurrency on (goal: 0 % aborts) and off (Delta Spark's
   file-level rule, for comparison);
4. abort rates of a MERGE-heavy and a compaction-heavy mix, row-level next to file-level
   (``benchmarks/commit_mixes.py``; sizes through TXSQL_BENCH_MIX_COMMITS and
   TXSQL_BENCH_COMPACTIONS);
5. commits through the multi-table coordinator next to plain ones, and 2-table groups per
   second with 1, 2 and 4 writer processes (``benchmarks/commit_groups.py``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event

import commit_groups
from commit_mixes import run_mix
from moto_server import MotoServer
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
    _placeholder(log, "data.parquet")
    with Transaction(log) as txn:
        txn.stage(
            [
                Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
                Metadata(id="bench", schema_string=SCHEMA, configuration=conf),
                AddFile("data.parquet", {}, 1, 0, stats=stats),
            ]
        )
        txn.commit("CREATE TABLE")


def _placeholder(log: DeltaLog, name: str) -> None:
    """An empty file where a commit names a data file (a commit checks its files exist)."""
    log.store.fs.write(f"{log.table_root}/{name}", b"")


def _tiny_add(log: DeltaLog, i: int) -> AddFile:
    """The add of a one-row file, its placeholder written."""
    _placeholder(log, f"f{i}.parquet")
    return AddFile(f"f{i}.parquet", {}, 1, 0, stats=json.dumps({"numRecords": 1}))


def conflict_check_ms(make_log: Callable[[int], DeltaLog], runs: int = 5) -> float:
    """One reader-writer transaction rebased over 100 winning blind appends."""
    timings = []
    for run in range(runs):
        log = make_log(run)
        _create(log, row_level=True)
        txn = Transaction(log)
        snapshot = txn.snapshot()
        assert snapshot is not None
        txn.record_scan(Comparison("=", Column("id"), Literal(-1)), list(snapshot.files), {})
        txn.stage([_tiny_add(log, 10_000)])
        for i in range(100):
            with Transaction(log) as winner:
                winner.stage([_tiny_add(log, i)])
                winner.commit("WRITE")
        started = time.perf_counter()
        result = txn.commit("WRITE")
        timings.append((time.perf_counter() - started) * 1000)
        assert result.version == 101
    return statistics.median(timings)


def commit_throughput(log: DeltaLog, commits: int = 300) -> float:
    _create(log, row_level=True)
    adds = [_tiny_add(log, i) for i in range(commits)]  # written before the clock starts
    started = time.perf_counter()
    for add in adds:
        with Transaction(log) as txn:
            txn.stage([add])
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
    with_s3 = os.environ.get("TXSQL_BENCH_S3", "1") != "0"
    s3_commits = int(os.environ.get("TXSQL_BENCH_S3_COMMITS", "100"))
    with tempfile.TemporaryDirectory() as tmp:
        moto = MotoServer(tmp) if with_s3 else None
        try:
            stores: list[tuple[str, Callable[[int], DeltaLog]]] = [
                ("memory", lambda run: DeltaLog(LogStore(f"/mem/c{run}", MemoryFileIO()))),
                ("local disk", lambda run: DeltaLog.for_path(os.path.join(tmp, f"c{run}"))),
            ]
            if moto is not None:
                bucket, options = moto.bucket("bench"), moto.options

                def s3_log(run: int) -> DeltaLog:
                    return DeltaLog.for_path(f"{bucket}/c{run}", options)

                stores.append(("S3 API (moto)", s3_log))
            for name, make_log in stores:
                print(
                    f"1. conflict check against 100 winning commits, {name}: "
                    f"{conflict_check_ms(make_log):.1f} ms (goal < 50 ms)"
                )
            rate = commit_throughput(DeltaLog.for_path(os.path.join(tmp, "tp")))
            print(f"2. tiny blind-append commits, one process, local disk: {rate:.0f} commits/s")
            if moto is not None:
                log = DeltaLog.for_path(f"{bucket}/tp", moto.options)
                rate = commit_throughput(log, s3_commits)
                print(
                    f"2. tiny blind-append commits, one process, S3 API (moto): "
                    f"{rate:.0f} commits/s"
                )
            commit_groups.run(None if moto is None else (moto.bucket("groups"), moto.options))
        finally:
            if moto is not None:
                moto.stop()
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
