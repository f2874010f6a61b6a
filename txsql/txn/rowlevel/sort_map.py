"""The row order of a sorting compaction (ZORDER, clustering), and translation through it.

A bin's sources are concatenated in map order: a source row's *bin position* is the
physical rows of the sources before it plus its own row index. The order file holds, for
each bin in turn, the bin position of every output row in output order (all output files
of the bin, one after another), as little-endian uint32 values, zlib-compressed. It is
written under :data:`~txsql.storage.paths.ROW_ORDER_DIR` before the commit that names it;
a failed commit leaves an unnamed file that log cleanup deletes with the expired log.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
from pyroaring import BitMap64

from txsql.storage.filesystem import FileIO
from txsql.txn.rowlevel.row_map import (
    RowMap,
    SortedBin,
    UntranslatableError,
    live_rows,
)

logger = logging.getLogger(__name__)

_DTYPE = np.dtype("<u4")


def fits_order_file(orders: Sequence[np.ndarray]) -> bool:
    """Every bin position fits the order file's uint32 (a bin of 2^32 rows or more gets
    no row map: the file-level rule applies to it)."""
    return all(o.size == 0 or (o.min() >= 0 and o.max() <= np.iinfo(_DTYPE).max) for o in orders)


def encode_order(orders: Sequence[np.ndarray]) -> bytes:
    """Each bin's bin positions in output order, as the order file's bytes.

    Raises:
        ValueError: A position does not fit (see :func:`fits_order_file`).
    """
    if not orders:
        return zlib.compress(b"")
    joined = np.concatenate([np.asarray(o, dtype=np.int64) for o in orders])
    if not fits_order_file([joined]):
        raise ValueError("bin positions out of range for the order file")
    return zlib.compress(joined.astype(_DTYPE).tobytes(), 1)


def decode_order(data: bytes, row_map: RowMap) -> list[np.ndarray] | None:
    """The per-bin arrays of an order file, or None if it does not fit the map."""
    try:
        raw = zlib.decompress(data)
    except zlib.error:
        return None
    if len(raw) % _DTYPE.itemsize:
        return None
    values = np.frombuffer(raw, dtype=_DTYPE).astype(np.int64)
    orders: list[np.ndarray] = []
    start = 0
    for b in row_map.bins:
        if not isinstance(b, SortedBin):
            return None
        n = sum(count for _, count in b.outputs)
        orders.append(values[start : start + n])
        start += n
    return orders if start == len(values) else None


def load_order(row_map: RowMap, table_root: str, fs: FileIO) -> list[np.ndarray] | None:
    """The map's row order read from its file (None: missing or not matching the map)."""
    if row_map.order_file is None:
        return None
    try:
        data = fs.read(f"{table_root.rstrip('/')}/{row_map.order_file}")
    except (OSError, ValueError):
        logger.warning("row order %s unreadable: file-level rules apply", row_map.order_file)
        return None
    orders = decode_order(data, row_map)
    if orders is None or not _consistent(row_map, orders):
        return None
    return orders


def _consistent(row_map: RowMap, orders: list[np.ndarray]) -> bool:
    """Every bin's order is a set of distinct in-range positions, one per copied row."""
    for b, order in zip(row_map.bins, orders):
        total = sum(s.rows for s in b.sources)
        if len(order) != live_rows(b.sources):
            return False
        if len(order) and (order.min() < 0 or order.max() >= total):
            return False
        if len(np.unique(order)) != len(order):
            return False
    return True


def translate_sorted(
    row_map: RowMap,
    orders: list[np.ndarray],
    rows: Mapping[str, BitMap64],
    layout: Mapping[str, BitMap64],
) -> dict[str, BitMap64]:
    """Source row indexes -> output row indexes through a sorting compaction's order.

    Raises:
        UntranslatableError: A row was not copied (deleted by the layout DV, past the end
            of its source, or absent from the order).
    """
    out: dict[str, BitMap64] = {}
    for b, order in zip(row_map.bins, orders):
        assert isinstance(b, SortedBin)
        wanted: list[int] = []
        offset = 0
        for s in b.sources:
            mine = rows.get(s.path)
            if mine:
                if mine.max() >= s.rows or mine & layout.get(s.path, BitMap64()):
                    raise UntranslatableError(f"rows of {s.path} were not copied by compaction")
                wanted += [offset + r for r in mine]
            offset += s.rows
        if not wanted:
            continue
        # Output row j holds bin position order[j]: invert for the wanted positions only.
        inverse = np.full(offset, -1, dtype=np.int64)
        inverse[order] = np.arange(len(order), dtype=np.int64)
        found = inverse[np.asarray(wanted, dtype=np.int64)]
        if (found < 0).any():
            raise UntranslatableError("rows missing from the compaction's row order")
        ends = np.cumsum([count for _, count in b.outputs])
        files = np.searchsorted(ends, found, side="right")
        starts = ends - [count for _, count in b.outputs]
        for k, j in zip(files.tolist(), found.tolist()):
            path = b.outputs[k][0]
            out.setdefault(path, BitMap64()).add(j - int(starts[k]))
    return out
