"""Abort rates of two write mixes, txsql's row-level rules next to Delta's file-level rules.

Used by ``benchmarks/commit.py``. No Spark: writer processes commit through
:class:`~txsql.txn.transaction.Transaction` on a local table whose data files are never
read, so each data file's ids are kept in a side file ``_ids/<path>.json`` (row index i
holds ids[i]) and the final table is checked against what the committed writes must leave.

* **MERGE-heavy**: ``WRITERS`` processes upsert disjoint keys, as ``MERGE … ON t.id = s.id``
  does per source row: a matched key is read (row position recorded), deleted through a DV
  on the shared data file and re-inserted in a new one-row file; every fourth MERGE inserts
  a new key. The read set is the matched key (the join's footprint).
* **compaction-heavy**: ``WRITERS - 1`` processes delete distinct ids through DVs spread
  over four files while one process compacts the whole table into one file again and
  again (OPTIMIZE / REORG PURGE, with txsql's row map).

``txsql.rowLevelConcurrency=false`` gives Delta Spark's file-level rules: a DV update of a
file anyone read conflicts, a compaction conflicts with every DML on its files.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from pyroaring import BitMap64

from txsql.dv.store import read_deletion_vector, write_deletion_vectors
from txsql.errors import CommitConflictError
from txsql.log.actions import Action, AddFile, Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE, Column, Comparison, Literal
from txsql.txn.rowlevel.row_map import ROW_MAP_PARAM, OutputBin, RowMap, Source, encode_row_map
from txsql.txn.transaction import Transaction

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
WRITERS = 4
MIX_COMMITS = int(os.environ.get("TXSQL_BENCH_MIX_COMMITS", "15"))  # per DML writer
COMPACTIONS = int(os.environ.get("TXSQL_BENCH_COMPACTIONS", "8"))
FILES = 4
ROWS = 100  # per initial file


@dataclass(frozen=True)
class MixResult:
    name: str
    row_level: bool
    commits: dict[str, int]
    aborts: dict[str, int]
    seconds: float

    def line(self) -> str:
        mode = "row-level" if self.row_level else "file-level (Delta Spark rule)"
        parts = []
        for kind in sorted(self.commits):
            done, failed = self.commits[kind], self.aborts[kind]
            rate = 100 * failed / max(1, done + failed)
            parts.append(f"{kind} {failed} aborts / {done} commits = {rate:.0f} %")
        return f"{self.name}, {mode}: " + "; ".join(parts) + f", {self.seconds:.1f} s"


# --- the table and its id side files ----------------------------------------------------------


def _stats(ids: Sequence[int]) -> str:
    body: dict[str, Any] = {"numRecords": len(ids), "nullCount": {"id": 0}}
    if ids:
        body |= {"minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)}}
    return json.dumps(body)


def _data_file(root: str, ids: Sequence[int], name: str, data_change: bool = True) -> AddFile:
    path = f"{name}.parquet"
    os.makedirs(os.path.join(root, "_ids"), exist_ok=True)
    with open(os.path.join(root, "_ids", path + ".json"), "w") as out:
        json.dump(list(ids), out)
    open(os.path.join(root, path), "wb").close()  # a placeholder: commits check files exist
    return AddFile(path, {}, 1, 0, data_change=data_change, stats=_stats(ids))


def _ids(root: str, add: AddFile) -> list[int]:
    with open(os.path.join(root, "_ids", add.path + ".json")) as f:
        ids: list[int] = json.load(f)
    return ids


def _deleted(root: str, log: DeltaLog, add: AddFile) -> BitMap64:
    if add.deletion_vector is None:
        return BitMap64()
    return read_deletion_vector(add.deletion_vector, root, log.store.fs)


def _create(root: str, row_level: bool) -> None:
    conf = {"delta.enableDeletionVectors": "true", "txsql.rowLevelConcurrency": str(row_level)}
    files = [_data_file(root, range(j * ROWS, (j + 1) * ROWS), f"d{j}") for j in range(FILES)]
    with Transaction(DeltaLog.for_path(root)) as txn:
        txn.stage(
            [
                Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
                Metadata(id="mix", schema_string=SCHEMA, configuration=conf),
                *files,
            ]
        )
        txn.commit("CREATE TABLE")


def live_ids(root: str) -> list[int]:
    """Every live id of the latest snapshot (with repeats, to catch duplicates)."""
    log = DeltaLog.for_path(root)
    out = []
    for add in log.snapshot().files:
        gone = _deleted(root, log, add)
        out.extend(i for r, i in enumerate(_ids(root, add)) if r not in gone)
    return sorted(out)


# --- one DML: delete one id through a DV (optionally re-inserting it: a MERGE update) ----------


def _dv_delete(root: str, log: DeltaLog, txn: Transaction, key: int) -> bool:
    """Stage a DV delete of ``key`` wherever it lives; False if it is not in the table."""
    snapshot = txn.snapshot()
    assert snapshot is not None
    for add in snapshot.files:
        ids = _ids(root, add)
        if key not in ids:
            continue
        old = _deleted(root, log, add)
        row = next((r for r, i in enumerate(ids) if i == key and r not in old), None)
        if row is None:
            continue
        txn.record_scan(
            Comparison("=", Column("id"), Literal(key)), [add], {add.path: BitMap64([row])}
        )
        (dv,) = write_deletion_vectors(root, log.store.fs, [old | BitMap64([row])])
        stats = json.loads(add.stats or "{}") | {"tightBounds": False}
        txn.stage(
            [
                add.to_remove(),
                AddFile(add.path, {}, 1, 0, stats=json.dumps(stats), deletion_vector=dv),
            ]
        )
        return True
    return False


def _retry(action: Callable[[Transaction], str | None], log: DeltaLog) -> tuple[int, str | None]:
    """Run ``action`` in fresh transactions until one commits; return (aborts, operation)."""
    aborts = 0
    while True:
        txn = Transaction(log)
        operation = action(txn)
        if operation is None:
            return aborts, None
        try:
            txn.commit(operation)
            return aborts, operation
        except CommitConflictError:
            aborts += 1


def _merge_writer(
    root: str, writer: int, start: Event, results: Queue[tuple[str, int, int]]
) -> None:
    log = DeltaLog.for_path(root)
    start.wait()
    aborts = 0
    for n in range(MIX_COMMITS):
        key = writer + WRITERS * n  # disjoint keys per writer
        new_key = n % 4 == 3

        def merge(txn: Transaction, key: int = key, new_key: bool = new_key) -> str:
            if new_key:
                key += 10_000  # not in the table: WHEN NOT MATCHED THEN INSERT
                txn.record_scan(Comparison("=", Column("id"), Literal(key)), [], {})
            else:
                assert _dv_delete(root, log, txn, key)
            txn.stage([_data_file(root, [key], f"m-{uuid.uuid4().hex}")])
            return "MERGE"

        failed, _ = _retry(merge, log)
        aborts += failed
    results.put(("MERGE", MIX_COMMITS, aborts))


def _delete_writer(
    root: str, writer: int, start: Event, results: Queue[tuple[str, int, int]]
) -> None:
    log = DeltaLog.for_path(root)
    start.wait()
    aborts = 0
    for n in range(MIX_COMMITS):
        # Spread over the four initial files: writer w deletes ids w, w + 3*ROWS/..., distinct.
        key = (n % FILES) * ROWS + writer + (WRITERS - 1) * (n // FILES)

        def delete(txn: Transaction, key: int = key) -> str:
            assert _dv_delete(root, log, txn, key), f"id {key} vanished"
            return "DELETE"

        failed, _ = _retry(delete, log)
        aborts += failed
    results.put(("DELETE", MIX_COMMITS, aborts))


def _compaction_writer(
    root: str, writer: int, start: Event, results: Queue[tuple[str, int, int]]
) -> None:
    del writer
    log = DeltaLog.for_path(root)
    start.wait()
    aborts = 0
    for _ in range(COMPACTIONS):
        while True:
            txn = Transaction(log)
            actions, parameters = _compaction(root, log, txn)
            txn.stage(actions)
            try:
                txn.commit("OPTIMIZE", parameters)
                break
            except CommitConflictError:
                aborts += 1
        time.sleep(0.05)  # a compaction service runs now and then, not back to back
    results.put(("OPTIMIZE", COMPACTIONS, aborts))


def _compaction(root: str, log: DeltaLog, txn: Transaction) -> tuple[list[Action], dict[str, str]]:
    """Every live file into one new file, in log order, skipping DV-deleted rows."""
    snapshot = txn.snapshot()
    assert snapshot is not None
    sources, out_ids = [], []
    for add in snapshot.files:
        ids, gone = _ids(root, add), _deleted(root, log, add)
        out_ids.extend(i for r, i in enumerate(ids) if r not in gone)
        sources.append(Source(add.path, len(ids), add.deletion_vector))
    output = _data_file(root, out_ids, f"c-{uuid.uuid4().hex}", data_change=False)
    row_map = RowMap((OutputBin(output.path, tuple(sources)),))
    txn.record_scan(TRUE, list(snapshot.files))
    removes: list[Action] = [f.to_remove(data_change=False) for f in snapshot.files]
    return [*removes, output], {ROW_MAP_PARAM: encode_row_map(row_map)}


# --- running a mix -----------------------------------------------------------------------------


def run_mix(name: str, row_level: bool) -> MixResult:
    with tempfile.TemporaryDirectory() as root:
        _create(root, row_level)
        before = live_ids(root)
        if name == "MERGE-heavy":
            targets = [_merge_writer] * WRITERS
        else:
            targets = [_delete_writer] * (WRITERS - 1) + [_compaction_writer]
        ctx = multiprocessing.get_context("spawn")
        start, results = ctx.Event(), ctx.Queue()
        workers = [
            ctx.Process(target=t, args=(root, w, start, results)) for w, t in enumerate(targets)
        ]
        for worker in workers:
            worker.start()
        time.sleep(2.0)  # let every worker import and block on the event
        started = time.perf_counter()
        start.set()
        commits: dict[str, int] = {}
        aborts: dict[str, int] = {}
        for _ in workers:
            kind, done, failed = results.get(timeout=900)
            commits[kind] = commits.get(kind, 0) + done
            aborts[kind] = aborts.get(kind, 0) + failed
        elapsed = time.perf_counter() - started
        for worker in workers:
            worker.join()
        _verify(name, root, before)
        return MixResult(name, row_level, commits, aborts, elapsed)


def _verify(name: str, root: str, before: list[int]) -> None:
    """No row lost, none resurrected, none duplicated: compare with what the writes imply."""
    after = live_ids(root)
    if name == "MERGE-heavy":
        inserted = [
            w + WRITERS * n + 10_000
            for w in range(WRITERS)
            for n in range(MIX_COMMITS)
            if n % 4 == 3
        ]
        expected = sorted(before + inserted)
    else:
        deleted = {
            (n % FILES) * ROWS + w + (WRITERS - 1) * (n // FILES)
            for w in range(WRITERS - 1)
            for n in range(MIX_COMMITS)
        }
        expected = sorted(i for i in before if i not in deleted)
    assert after == expected, f"{name}: the final table differs from the committed writes"
