"""The row maps an OPTIMIZE / REORG records (``txsql.txn.rowlevel.row_map``): built from
the files Spark wrote, so a DML racing the compaction and the compaction both commit.

Bin-packing: each bin is written by its own task in source order, so task ``i``'s one
file holds bin ``i``'s live rows in order (:func:`build_row_map`). Sorting (ZORDER,
clustering): the rewrite's sort is a total order (the sort key, then source file and row
index) and the sorted rows are cached as the write computes them, so a narrow read of
that cache yields each output row's bin position in the order the write produced
(:func:`bin_orders`); task ``i`` writes bin
``i``'s rows into files ``c000``, ``c001``, ... in turn (:func:`build_sorted_map`). A map is
only recorded when every file is accounted for with exactly the bin's live row count.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING

import numpy as np

from txsql.log.actions import AddFile
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import ROW_ORDER_DIR
from txsql.txn.readset import norm_path
from txsql.txn.rowlevel.row_map import OutputBin, RowMap, SortedBin, Source, live_rows
from txsql.txn.rowlevel.sort_map import encode_order
from txsql.txn.rowlevel.state import num_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Spark names a task's output files part-<task number>-<uuid>-c<file counter>...
_PART = re.compile(r"(?:^|/)part-(\d+)-[^/]*?(?:-c(\d+))?\.[^/]*$")


def bin_sources(bins: list[list[AddFile]]) -> list[tuple[Source, ...]] | None:
    """Each bin's sources with their physical row counts (None: a file has no count)."""
    out = []
    for b in bins:
        sources = []
        for f in b:
            rows = num_records(f.stats)
            if rows is None:
                return None
            sources.append(Source(norm_path(f.path), rows, f.deletion_vector))
        out.append(tuple(sources))
    return out


def _task_files(adds: list[AddFile]) -> dict[int, list[AddFile]] | None:
    """The written files by task, in the order each task wrote them."""
    found: dict[int, list[tuple[int, AddFile]]] = {}
    for add in adds:
        m = _PART.search(norm_path(add.path))
        if m is None:
            return None
        found.setdefault(int(m.group(1)), []).append((int(m.group(2) or 0), add))
    by_task = {}
    for task, files in found.items():
        counters = [c for c, _ in files]
        if len(set(counters)) != len(counters):
            return None
        by_task[task] = [a for _, a in sorted(files, key=lambda cf: cf[0])]
    return by_task


Outputs = list[tuple[str, int]]


def _bins_written(
    bins: list[list[AddFile]], adds: list[AddFile]
) -> list[tuple[tuple[Source, ...], Outputs]] | None:
    """Each bin's sources and the files its task wrote, in order, with their row counts;
    None unless every file is a bin's and each bin's files hold exactly its live rows."""
    sources = bin_sources(bins)
    by_task = _task_files(adds)
    if sources is None or by_task is None or not set(by_task) <= set(range(len(bins))):
        return None
    out = []
    for i, bin_sources_ in enumerate(sources):
        counts = [(norm_path(a.path), num_records(a.stats)) for a in by_task.get(i, [])]
        outputs = [(path, n) for path, n in counts if n is not None]
        if len(outputs) < len(counts) or sum(n for _, n in outputs) != live_rows(bin_sources_):
            return None
        out.append((bin_sources_, outputs))
    return out


def build_row_map(bins: list[list[AddFile]], adds: list[AddFile]) -> RowMap | None:
    """The row map of a bin-packing rewrite (one file per bin at most), or None."""
    written = _bins_written(bins, adds)
    if written is None or any(len(outputs) > 1 for _, outputs in written):
        return None
    return RowMap(
        tuple(OutputBin(outputs[0][0] if outputs else None, src) for src, outputs in written)
    )


def build_sorted_map(
    bins: list[list[AddFile]], adds: list[AddFile], order_file: str
) -> RowMap | None:
    """The row map of a sorting rewrite whose order goes to ``order_file``, or None."""
    written = _bins_written(bins, adds)
    if written is None:
        return None
    return RowMap(tuple(SortedBin(tuple(out), src) for src, out in written), order_file)


def bin_orders(
    sorted_rows: DataFrame, bin_key: str, position: str, keys: list[int]
) -> list[np.ndarray]:
    """Each bin's bin positions in output order: one narrow read of the sorted rows
    (``keys[i]`` is bin ``i``'s key; Spark returns partitions, and rows, in order)."""
    table = sorted_rows.select(bin_key, position).toArrow()
    key_values = table.column(0).to_numpy()
    # One stable sort by bin keeps each bin's rows in output order (a mask per bin would
    # scan every row once per bin).
    by_bin = np.argsort(key_values, kind="stable")
    sorted_keys = key_values[by_bin]
    positions = table.column(1).to_numpy().astype(np.int64)[by_bin]
    starts = np.searchsorted(sorted_keys, keys, side="left")
    ends = np.searchsorted(sorted_keys, keys, side="right")
    return [positions[lo:hi] for lo, hi in zip(starts, ends)]


def new_order_file() -> str:
    """A fresh order file's path relative to the table root."""
    return f"{ROW_ORDER_DIR}/{uuid.uuid4()}.bin"


def write_row_order(fs: FileIO, table_root: str, relative: str, orders: list[np.ndarray]) -> None:
    """Write the order file (before the commit that names it)."""
    fs.write(f"{table_root.rstrip('/')}/{relative}", encode_order(orders))


def joined(maps: list[RowMap | None]) -> RowMap | None:
    """One map of several bins' maps (one-task rewrites), if each bin has one."""
    if any(m is None for m in maps) or not maps:
        return None
    present = [m for m in maps if m is not None]
    return RowMap(tuple(b for m in present for b in m.bins), present[0].order_file)
