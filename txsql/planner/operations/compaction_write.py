"""The rewrite of OPTIMIZE / REORG (``txsql.planner.operations.optimize`` plans the bins):
one Spark job writes every bin's live rows, and for a sort a narrow read of their cache gives
the rows' order for the row map (:mod:`txsql.planner.operations.compaction_maps`).

Row order: without a sort key a bin's rows keep their order (file by file, by row index).
``ZORDER BY (a, b)`` and clustering sort a bin's rows by a Z-order value: each column's rank
within the bin is scaled to ``bits`` bits (``percent_rank``) and the bits of all columns
are interleaved (Morton order), so rows close in every column end up close together; with
one column the rows are simply sorted by it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import Window
from pyspark.sql import functions as F

from txsql.engine.names import fresh_names
from txsql.engine.scan import snapshot_row_ids
from txsql.engine.schema import quote
from txsql.engine.write import write_data_files
from txsql.log.actions import AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.jobs import count_job
from txsql.planner.dml.rewrite import lineage_columns, scan_files
from txsql.planner.operations.compaction_maps import (
    bin_orders,
    bin_sources,
    build_row_map,
    build_sorted_map,
    joined,
    new_order_file,
    write_row_order,
)
from txsql.storage.filesystem import FileIO
from txsql.txn.rowlevel.row_map import RowMap, Source
from txsql.txn.rowlevel.sort_map import fits_order_file

if TYPE_CHECKING:
    from pyspark.sql import Column

_BIN = "_txsql_bin"
_ORDER = "_txsql_order"
_START = "_txsql_start"
_Z = "_txsql_z"


def row_map_of(
    fs: FileIO,
    snapshot: Snapshot,
    groups: list[list[list[AddFile]]],
    written: list[tuple[list[AddFile], list[np.ndarray] | None]],
    *,
    sorting: bool,
) -> RowMap | None:
    """The row map of the rewrite (one per group of bins written together, joined); a
    sorting rewrite's row order is written to its file here, before the commit."""
    if not sorting:
        return joined([build_row_map(g, adds) for g, (adds, _) in zip(groups, written)])
    if any(orders is None for _, orders in written):
        return None
    order_file = new_order_file()
    maps = [build_sorted_map(g, adds, order_file) for g, (adds, _) in zip(groups, written)]
    row_map = joined(maps)
    orders = [o for _, group_orders in written for o in group_orders or []]
    if row_map is None or not fits_order_file(orders):
        return None
    write_row_order(fs, snapshot.table_root, order_file, orders)
    return row_map


def rewrite_bins(
    ctx: RunContext,
    snapshot: Snapshot,
    bins: list[list[AddFile]],
    zorder: tuple[str, ...],
    per_file: int | None = None,
    provider: str | None = None,
    *,
    one_task: bool = False,
    ordered: bool = False,
) -> tuple[list[AddFile], list[np.ndarray] | None]:
    """Write each bin's live rows as one file (Spark groups rows by bin in one job), or as
    files of ``per_file`` rows; new files carry ``provider`` as their clustering provider.
    With ``one_task`` (a single bin) one task reads and writes it, with no shuffle: idle
    maintenance's one task slot. With ``ordered`` (a sort) also each bin's row order
    (:func:`~txsql.planner.operations.compaction_maps.bin_orders`; None when a source
    has no row count)."""

    files = [f for b in bins for f in b]
    table_columns = [f["name"] for f in snapshot.schema_json["fields"]]
    file_column, row_column = snapshot_row_ids(snapshot)
    # Helper names fresh against the table's columns: a user column "_txsql_bin" survives.
    bin_key, order, start, z = fresh_names(
        [_BIN, _ORDER, _START, _Z], [*table_columns, file_column, row_column]
    )
    sources = bin_sources(bins) if ordered else None
    # Each file's first bin position: the physical rows of the bin's files before it.
    starts = [0] * len(files) if sources is None else _starts(sources)
    keys = [0] if one_task else _bin_keys(ctx, len(bins))
    placed = [(f.path, keys[i], j) for i, b in enumerate(bins) for j, f in enumerate(b)]
    mapping = [(*p, first) for p, first in zip(placed, starts)]
    rows = scan_files(ctx.spark, snapshot, files, with_row_ids=True, with_lineage=True)
    if one_task:
        # One task reads the bin's files in turn (a single partition also satisfies the
        # rank windows' distribution, so nothing shuffles). File order from map literals:
        # a broadcast join's collect would be a second job of several tasks.
        def by_file(k: int) -> Column:
            literal = F.create_map(*[F.lit(x) for m in mapping for x in (m[0], m[k])])
            return F.element_at(literal, F.col(quote(file_column)))

        columns = {bin_key: F.lit(0), order: by_file(2), start: by_file(3)}
        rows = rows.withColumns(columns).coalesce(1)
    else:
        bin_df = ctx.spark.createDataFrame(
            mapping, f"{quote(file_column)} STRING, {bin_key} BIGINT, {order} INT, {start} BIGINT"
        )
        rows = rows.join(F.broadcast(bin_df), file_column)
        rows = rows.repartition(len(bins), bin_key)
    parts = [F.col(quote(c)) for c in snapshot.partition_columns]
    # Source order and row index after the sort key: a total order, so the write and the
    # read of the row order below see the rows in the same order.
    source_order = [F.col(order), F.col(quote(row_column))]
    if len(zorder) == 1:  # one column: its own order is the curve
        rows = rows.sortWithinPartitions(*parts, bin_key, F.col(quote(zorder[0])), *source_order)
    elif zorder:
        buckets = fresh_names([f"{_Z}_{i}" for i in range(len(zorder))], rows.columns)
        rows = rows.withColumns(dict(zip(buckets, rank_buckets(zorder, bin_key))))
        rows = rows.withColumn(z, interleaved(buckets))
        rows = rows.sortWithinPartitions(*parts, bin_key, z, *source_order)
    else:
        rows = rows.sortWithinPartitions(*parts, bin_key, *source_order)
    # Copied rows keep their stable ids and commit versions (row tracking).
    kept = [F.col(quote(c)) for c in table_columns + lineage_columns(snapshot)]
    position = fresh_names(["_txsql_position"], rows.columns)[0]
    if sources is not None:
        # The write fills the cache as it goes; the row order is then read from it
        # (sorting the rows a second time doubled a 2M-row clustering OPTIMIZE).
        bin_position = (F.col(start) + F.col(quote(row_column))).alias(position)
        rows = rows.select(*kept, F.col(bin_key), bin_position)
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Copies of committed rows: the column rules held when they were written.
        adds = write_data_files(
            ctx.spark,
            rows.select(*kept),
            snapshot.table_root,
            snapshot.metadata,
            max_records_per_file=per_file,
            enforce=False,
            protocol=snapshot.protocol,
        )
        adds = [replace(a, data_change=False, clustering_provider=provider) for a in adds]
        if sources is None:
            return adds, None
        return adds, count_job(lambda: bin_orders(rows, bin_key, position, keys))
    finally:
        if sources is not None:
            rows.unpersist()


def _starts(sources: list[tuple[Source, ...]]) -> list[int]:
    out = []
    for bin_sources_ in sources:
        offset = 0
        for s in bin_sources_:
            out.append(offset)
            offset += s.rows
    return out


def _bin_keys(ctx: RunContext, n: int) -> list[int]:
    """One key per bin such that ``repartition(n, key)`` sends bin ``i`` to task ``i``.

    Spark's hash partitioning puts a row in ``pmod(hash(key), n)`` (Murmur3, as the SQL
    ``hash`` function); picking keys by that formula gives every bin its own task, so each
    bin becomes exactly one file (plain bin numbers would collide and merge bins).
    """

    part = F.expr(f"pmod(hash(id), {n})").alias("part")
    found: dict[int, int] = {}
    for row in ctx.spark.range(0, 64 * n).select("id", part).collect():
        found.setdefault(int(row["part"]), int(row["id"]))
    return [found.get(i, i) for i in range(n)]


def rank_buckets(columns: tuple[str, ...], group: str) -> list[Column]:
    """Each column's rank within ``group`` scaled to the bits it gets in the Z-order key."""
    bits = _bits(columns)
    scale = float((1 << bits) - 1)
    return [
        F.floor(
            F.percent_rank().over(Window.partitionBy(group).orderBy(F.col(f"`{c}`"))) * scale
        ).cast("long")
        for c in columns
    ]


def interleaved(buckets: list[str]) -> Column:
    """A Morton (Z-order) key: the bits of the bucket columns interleaved. The buckets are
    columns computed once: an expression per bit would repeat each rank window 16 times."""
    z: Column = F.lit(0).cast("long")
    for b in range(_bits(tuple(buckets))):
        for i, bucket in enumerate(buckets):
            shifted = F.shiftright(F.col(f"`{bucket}`"), b).bitwiseAND(F.lit(1))
            z = z.bitwiseOR(F.shiftleft(shifted, b * len(buckets) + i))
    return z


def _bits(columns: tuple[str, ...]) -> int:
    return max(1, min(16, 62 // len(columns)))
