"""A sorting compaction's row order (txsql.txn.rowlevel.sort_map): the order file's bytes,
its checks against the map, and source rows translated to output rows. No Spark: the
expected positions are worked out by hand from a small permutation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pyroaring import BitMap64

from txsql.log.actions import AddFile
from txsql.planner.operations.compaction_maps import build_sorted_map
from txsql.storage.filesystem import MemoryFileIO
from txsql.txn.rowlevel.row_map import (
    RowMap,
    SortedBin,
    Source,
    UntranslatableError,
    decode_row_map,
    encode_row_map,
)
from txsql.txn.rowlevel.sort_map import decode_order, encode_order, load_order, translate_sorted

# One bin: a (3 rows) then b (2 rows): bin positions a0..a2 = 0..2, b0..b1 = 3..4.
# The sort wrote b1, a2, a0 | b0, a1 into two files (a1 ... all five rows live).
SOURCES = (Source("a.parquet", 3, None), Source("b.parquet", 2, None))
OUTPUTS = (("o1.parquet", 3), ("o2.parquet", 2))
ORDER = np.array([4, 2, 0, 3, 1])
ROW_MAP = RowMap((SortedBin(OUTPUTS, SOURCES),), "_txsql_row_orders/x.bin")


def _bits(*rows: int) -> BitMap64:
    return BitMap64(rows)


def test_the_map_and_its_order_round_trip() -> None:
    assert decode_row_map({"txsqlRowMap": encode_row_map(ROW_MAP)}) == ROW_MAP
    [order] = decode_order(encode_order([ORDER]), ROW_MAP) or []
    assert order.tolist() == ORDER.tolist()
    assert decode_order(encode_order([ORDER[:4]]), ROW_MAP) is None, "length must match"
    assert decode_order(b"not zlib", ROW_MAP) is None


def test_source_rows_land_where_the_order_put_them() -> None:
    moved = translate_sorted(
        ROW_MAP, [ORDER], {"a.parquet": _bits(0, 1), "b.parquet": _bits(1)}, {}
    )
    # a0 is output row 2 (o1 row 2), a1 is output row 4 (o2 row 1), b1 is output row 0.
    assert moved == {"o1.parquet": _bits(0, 2), "o2.parquet": _bits(1)}


def test_rows_a_layout_dv_skipped_are_not_translatable() -> None:
    # a1 deleted before the sort: 4 live rows, the order skips bin position 1.
    row_map = RowMap((SortedBin((("o1.parquet", 4),), SOURCES),), "x")
    order = np.array([4, 2, 0, 3])
    assert translate_sorted(row_map, [order], {"b.parquet": _bits(0)}, {"a.parquet": _bits(1)}) == {
        "o1.parquet": _bits(3)
    }
    with pytest.raises(UntranslatableError):
        translate_sorted(row_map, [order], {"a.parquet": _bits(1)}, {"a.parquet": _bits(1)})
    with pytest.raises(UntranslatableError):
        translate_sorted(row_map, [order], {"b.parquet": _bits(2)}, {})  # past the end


def test_an_order_that_does_not_fit_is_not_loaded() -> None:
    fs = MemoryFileIO()
    root = "/t"
    fs.write(f"{root}/{ROW_MAP.order_file}", encode_order([ORDER]))
    loaded = load_order(ROW_MAP, root, fs)
    assert loaded is not None and loaded[0].tolist() == ORDER.tolist()
    fs.write(f"{root}/{ROW_MAP.order_file}", encode_order([np.array([4, 2, 0, 3, 3])]))
    assert load_order(ROW_MAP, root, fs) is None, "a repeated position"
    fs.write(f"{root}/{ROW_MAP.order_file}", encode_order([np.array([4, 2, 0, 3, 5])]))
    assert load_order(ROW_MAP, root, fs) is None, "a position past the sources"
    assert load_order(RowMap(ROW_MAP.bins, "_txsql_row_orders/missing.bin"), root, fs) is None


def _add(path: str, rows: int) -> AddFile:
    return AddFile(path, {}, 1, 0, stats=json.dumps({"numRecords": rows}))


def test_a_tasks_files_follow_their_counter() -> None:
    bins = [[_add("a.parquet", 3), _add("b.parquet", 2)], [_add("c.parquet", 4)]]
    adds = [
        _add("part-00000-u-c001.snappy.parquet", 2),
        _add("part-00001-u-c000.snappy.parquet", 4),
        _add("part-00000-u-c000.snappy.parquet", 3),
    ]
    row_map = build_sorted_map(bins, adds, "order.bin")
    assert row_map is not None and row_map.order_file == "order.bin"
    first, second = row_map.bins
    assert isinstance(first, SortedBin) and isinstance(second, SortedBin)
    assert first.outputs == (
        ("part-00000-u-c000.snappy.parquet", 3),
        ("part-00000-u-c001.snappy.parquet", 2),
    )
    assert second.outputs == (("part-00001-u-c000.snappy.parquet", 4),)
    short = [*adds[:2], _add("part-00000-u-c000.snappy.parquet", 2)]
    assert build_sorted_map(bins, short, "order.bin") is None, "rows must add up"
