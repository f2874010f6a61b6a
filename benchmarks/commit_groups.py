"""Commits through the multi-table coordinator next to plain commits (issue 20), no Spark.

Run: ``python benchmarks/commit_groups.py`` (``benchmarks/commit.py`` runs it too, as its
section 5). Prints, in one run, on local disk and on an S3 API (moto's server;
``TXSQL_BENCH_S3=0`` skips it):

1. the median time of a tiny blind-append commit to an enrolled table (through the
   coordinator: ratify a record carrying the commit inline, publish) against the same
   commit to a plain table (goal <= 1.2x), and the floor of that overhead: the time of the
   one durable write an enrolled commit adds (the coordinator record);
2. the median time of a 2-table COMMIT (one group) against a single enrolled commit
   (goal <= 2x);
3. groups committed per second by 1, 2 and 4 writer processes, each committing 2-table
   groups over its own two tables, all through one coordinator (they contend only for
   its positions).

Tables are real ``_delta_log`` directories; the data files they name are placeholders
(the transaction layer never reads them). The three latencies are measured in turns (a
plain commit, an enrolled one, a group, again), so that load on the machine hits all alike.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

from moto_server import MotoServer

from txsql.log import features, protocol_upgrade
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage.factory import configure_storage, file_io_for
from txsql.txn.transaction import Transaction, commit_together

RUNS = int(os.environ.get("TXSQL_BENCH_GROUP_RUNS", "40"))
GROUPS_PER_WRITER = int(os.environ.get("TXSQL_BENCH_GROUPS_PER_WRITER", "20"))
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
ENROLLED = {features.MULTI_TABLE_PROPERTY: "true"}


def make_table(root: str, enrolled: bool) -> DeltaLog:
    log = DeltaLog.for_path(root)
    metadata = Metadata(
        id=f"bench-{os.path.basename(root)}",
        schema_string=SCHEMA,
        configuration=dict(ENROLLED) if enrolled else {},
    )
    with Transaction(log) as txn:
        txn.stage([protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
        txn.commit("CREATE TABLE")
    return log


def _append(log: DeltaLog, name: str) -> Transaction:
    """A transaction adding one placeholder file (a commit checks its files exist)."""
    file_io_for(log.table_root).write(f"{log.table_root}/{name}.parquet", b"")
    txn = Transaction(log)
    stats = json.dumps({"numRecords": 1, "minValues": {"id": 1}, "maxValues": {"id": 1}})
    txn.stage([AddFile(f"{name}.parquet", {}, 10, 1, data_change=True, stats=stats)])
    return txn


def commit_one(log: DeltaLog, name: str) -> Callable[[], object]:
    """The commit of one append, its file written already (only the commit is timed)."""
    txn = _append(log, name)
    return lambda: txn.commit("WRITE")


def commit_two(a: DeltaLog, b: DeltaLog, name: str) -> Callable[[], object]:
    """The COMMIT of a group appending to ``a`` and ``b``, its files written already."""
    txns = [_append(a, name), _append(b, name)]
    labels = [a.table_root, b.table_root]
    return lambda: commit_together([(t, t.commit_loop("WRITE")) for t in txns], labels)


def medians_ms(prepares: list[Callable[[str], Callable[[], object]]]) -> list[float]:
    """The median ms of each kind of commit, measured in turns."""
    timings: list[list[float]] = [[] for _ in prepares]
    for i in range(RUNS):
        for prepare, out in zip(prepares, timings, strict=True):
            commit = prepare(f"f{i}")
            started = time.perf_counter()
            commit()
            out.append((time.perf_counter() - started) * 1000)
    return [statistics.median(t) for t in timings]


def extra_write(root: str) -> Callable[[str], Callable[[], object]]:
    """What an enrolled commit durably writes that a plain one does not: the coordinator
    record (with the commit inline), one put-if-absent of its usual size. Its time is the
    floor of the enrolled commit's overhead: all or nothing needs the record."""
    fs = file_io_for(root)
    record = b"y" * 1000

    def prepare(name: str) -> Callable[[], object]:
        return lambda: fs.write_if_absent(f"{root}/_coordinator/{name}.json", record)

    return prepare


def latencies(root: str) -> list[float]:
    """Median ms of a plain commit, an enrolled one, a 2-table group, and the floor."""
    plain = make_table(f"{root}/plain", enrolled=False)
    one = make_table(f"{root}/one", enrolled=True)
    a, b = make_table(f"{root}/a", enrolled=True), make_table(f"{root}/b", enrolled=True)
    return medians_ms(
        [
            lambda name: commit_one(plain, name),
            lambda name: commit_one(one, name),
            lambda name: commit_two(a, b, name),
            extra_write(f"{root}/floor"),
        ]
    )


def _writer(root: str, writer: int, options: Mapping[str, object], ready: Any) -> None:
    configure_storage(options)
    a = DeltaLog.for_path(f"{root}/w{writer}a")
    b = DeltaLog.for_path(f"{root}/w{writer}b")
    commit_two(a, b, f"w{writer}warm")()  # imports and first listings, before the clock
    ready.wait()
    for i in range(GROUPS_PER_WRITER):
        commit_two(a, b, f"w{writer}g{i}")()


def groups_per_second(root: str, writers: int, options: Mapping[str, object]) -> float:
    for w in range(writers):
        make_table(f"{root}/w{w}a", enrolled=True)
        make_table(f"{root}/w{w}b", enrolled=True)
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(writers + 1)
    processes = [
        context.Process(target=_writer, args=(root, w, dict(options), ready))
        for w in range(writers)
    ]
    for p in processes:
        p.start()
    ready.wait()
    started = time.perf_counter()
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a writer failed (exit code {p.exitcode})")
    return writers * GROUPS_PER_WRITER / (time.perf_counter() - started)


def report(store: str, root: str, options: Mapping[str, object]) -> None:
    configure_storage(options)
    plain, enrolled, group, floor = latencies(f"{root}/latency")
    print(f"  {store}: plain commit {plain:.1f} ms, enrolled {enrolled:.1f} ms "
          f"({enrolled / plain:.2f}x, goal <= 1.2x); 2-table COMMIT {group:.1f} ms "
          f"({group / enrolled:.2f}x a single enrolled commit, goal <= 2x)")  # fmt: skip
    print(f"  {store}: floor of the enrolled overhead, its extra durable write (the "
          f"coordinator record) {floor:.1f} ms: plain + floor = "
          f"{(plain + floor) / plain:.2f}x a plain commit")  # fmt: skip
    rates = [f"{n}: {groups_per_second(f'{root}/w{n}', n, options):.1f}" for n in (1, 2, 4)]
    print(f"  {store}: 2-table groups/s by writer processes {', '.join(rates)}")


def run(s3: tuple[str, Mapping[str, object]] | None) -> None:
    """Print this benchmark's lines (``s3``: a bucket URI and its options, or None)."""
    print(f"5. commits through the multi-table coordinator (median of {RUNS}):")
    with tempfile.TemporaryDirectory() as tmp:
        report("local disk", tmp, {})
    if s3 is not None:
        bucket, options = s3
        report("S3 API (moto)", f"{bucket}/groups", options)
    configure_storage({})


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        moto = MotoServer(tmp) if os.environ.get("TXSQL_BENCH_S3", "1") != "0" else None
        try:
            run(None if moto is None else (moto.bucket("groups"), moto.options))
        finally:
            if moto is not None:
                moto.stop()


if __name__ == "__main__":
    main()
