"""OPTIMIZE [WHERE partition-pred] [ZORDER BY (...)] and REORG TABLE ... APPLY (PURGE).

Bin-packing (Delta's ``OptimizeExecutor``): per partition, files smaller than the target
size, or carrying a deletion vector, are grouped in log order into bins of at most the
target size (``delta.targetFileSize``, else the Spark conf
``spark.databricks.delta.optimize.maxFileSize``, else 128 MB); each bin becomes one new file.
A bin of one file without a DV is left alone (nothing to gain). Rows deleted by DVs are
not copied, so rewritten files carry no DV. Every action has ``dataChange=false``: the
commit is checked under SnapshotIsolation, as in Delta.

Row order: without ZORDER a bin's rows keep their order (file by file, by row index), so
``preserveInsertionOrder`` is true. ``ZORDER BY (a, b)`` rewrites every file of each
selected partition as one bin and sorts its rows by a Z-order value: each column's rank
within the bin is scaled to ``bits`` bits (``percent_rank``) and the bits of all columns
are interleaved (Morton order), so rows close in every column end up close together; with
one column the rows are simply sorted by it. A clustered table's OPTIMIZE does the same over
its clustering columns (``txsql.planner.operations.clustering``).

REORG ... APPLY (PURGE) rewrites only files that have a deletion vector.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from txsql.engine.names import fresh_names
from txsql.engine.scan import snapshot_row_ids
from txsql.engine.schema import quote
from txsql.engine.write import write_data_files
from txsql.errors import SchemaError
from txsql.log import clustering, features
from txsql.log.actions import AddFile
from txsql.log.predicates import TRUE, Predicate, has_opaque, referenced_columns
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result, lineage_columns, scan_files, size_summary
from txsql.planner.metrics import OptimizeMetrics
from txsql.planner.operations.clustering import clustering_bins, clustering_order, rows_per_file
from txsql.planner.sql.command_statements import OptimizeTable
from txsql.planner.sql.predicates import files_in_partitions, predicate_sql, to_predicate
from txsql.result import Result
from txsql.txn.readset import norm_path
from txsql.txn.rowlevel.row_map import ROW_MAP_PARAM, OutputBin, RowMap, Source, encode_row_map
from txsql.txn.rowlevel.state import num_records

if TYPE_CHECKING:
    from pyspark.sql import Column

DEFAULT_TARGET_SIZE = 128 * 1024 * 1024
TARGET_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_BIN = "_txsql_bin"
_ORDER = "_txsql_order"
_Z = "_txsql_z"
# Spark names a task's output file part-<task number>-...; bin i is written by task i.
_PART = re.compile(r"(?:^|/)part-(\d+)-[^/]*$")

RESULT_SCHEMA = (
    "path STRING, metrics STRUCT<numFilesAdded: BIGINT, numFilesRemoved: BIGINT, "
    "filesAdded: STRUCT<min: BIGINT, max: BIGINT, avg: DOUBLE, totalFiles: BIGINT, "
    "totalSize: BIGINT>, filesRemoved: STRUCT<min: BIGINT, max: BIGINT, avg: DOUBLE, "
    "totalFiles: BIGINT, totalSize: BIGINT>, partitionsOptimized: BIGINT, "
    "zOrderStats: STRUCT<strategyName: STRING, zOrderBy: ARRAY<STRING>, "
    "numOutputFiles: BIGINT>, numBatches: BIGINT, totalConsideredFiles: BIGINT, "
    "totalFilesSkipped: BIGINT, preserveInsertionOrder: BOOLEAN, "
    "numDeletionVectorsRemoved: BIGINT>"
)


def run_optimize(ctx: RunContext, statement: OptimizeTable, text: str) -> Result:
    operation = "REORG" if statement.purge else "OPTIMIZE"
    log = ctx.catalog.existing_log(statement.target)
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    assert snapshot is not None
    # Refused by name before any file is written (a VARIANT column, a feature txsql
    # does not write), not after at the commit.
    features.check_writable(snapshot.protocol, snapshot.metadata, existing=snapshot.metadata)
    predicate = _partition_predicate(statement, snapshot)
    zorder = _zorder_columns(statement, snapshot)
    considered = files_in_partitions(snapshot, predicate)
    target_size = target_file_size(ctx, snapshot)
    cluster_by = () if statement.purge else clustering_order(snapshot)
    _check_full(statement, cluster_by)
    per_file: int | None = None
    if cluster_by:  # liquid clustering: sort the new files along a Z-order curve
        bins, zorder = clustering_bins(considered, full=statement.full), cluster_by
        per_file = rows_per_file([f for b in bins for f in b], target_size)
    else:
        if not statement.purge:
            # A file a clustering laid out (Delta's 'liquid') is never compacted or
            # re-sorted without its clustering (PROTOCOL.md "Clustered Table").
            considered = [f for f in considered if f.clustering_provider is None]
        if statement.purge_threshold > 0:
            considered = [f for f in considered if deleted_fraction(f) >= statement.purge_threshold]
        bins = plan_bins(
            considered, snapshot, target_size, purge=statement.purge, zorder=bool(zorder)
        )
    rewritten = [f for b in bins for f in b]
    adds: list[AddFile] = []
    row_map: RowMap | None = None
    if bins:
        txn.record_scan(predicate, rewritten)
        provider = clustering.PROVIDER if cluster_by else None
        adds = _rewrite(ctx, snapshot, bins, zorder, per_file, provider)
        row_map = None if zorder else build_row_map(bins, adds)
        txn.stage([f.to_remove(data_change=False) for f in rewritten])
        txn.stage(adds)
    described = predicate_sql(statement.where, snapshot.schema_json) if statement.where else None
    parameters: dict[str, Any] = {"predicate": json.dumps([described] if described else [])}
    if statement.purge:
        parameters["applyPurge"] = True
    else:
        parameters |= {"zOrderBy": json.dumps(list(zorder)), "auto": False}
    if row_map is not None:
        # Where every surviving row landed: lets concurrent DML and this commit both land.
        parameters[ROW_MAP_PARAM] = encode_row_map(row_map)
    dvs_removed = sum(1 for f in rewritten if f.deletion_vector is not None)
    metrics = OptimizeMetrics.of(rewritten, adds, dvs_removed).delta()
    committed = ctx.commit(txn, operation, parameters, metrics) if bins else None
    summary: dict[str, Any] = {
        "numFilesAdded": len(adds),
        "numFilesRemoved": len(rewritten),
        "filesAdded": size_summary(adds),
        "filesRemoved": size_summary(rewritten),
        "partitionsOptimized": len({_key(b[0]) for b in bins}),
        "zOrderStats": (
            {
                "strategyName": "interleaved-rank",
                "zOrderBy": list(zorder),
                "numOutputFiles": len(adds),
            }
            if zorder
            else None
        ),
        "numBatches": 1 if bins else 0,
        "totalConsideredFiles": len(considered),
        "totalFilesSkipped": len(considered) - len(rewritten),
        "preserveInsertionOrder": not zorder,
        "numDeletionVectorsRemoved": dvs_removed,
    }
    df = ctx.spark.createDataFrame(
        [{"path": snapshot.table_root, "metrics": summary}], RESULT_SCHEMA
    )
    flat = {k: int(v) for k, v in summary.items() if isinstance(v, (int, bool))}
    if not bins:
        return Result(
            text,
            operation,
            version=snapshot.version,
            table=statement.target.display,
            metrics=flat,
            df=df,
            message="nothing to compact; no commit",
        )
    return commit_result(
        text, statement.target.display, operation, committed, txn.read_version, flat, df=df
    )


def target_file_size(ctx: RunContext, snapshot: Snapshot) -> int:
    """Bytes per output file: ``delta.targetFileSize``, the Spark conf, or 128 MB."""
    configured = snapshot.configuration.get("delta.targetFileSize")
    if configured is None:
        configured = ctx.spark.conf.get(TARGET_SIZE_CONF, None)
    if configured is None:
        return DEFAULT_TARGET_SIZE
    return parse_size(str(configured))


def parse_size(text: str) -> int:
    """Bytes in ``text`` (``1048576``, ``64mb``, ``1g``).

    >>> parse_size("2kb"), parse_size("1048576"), parse_size("1g")
    (2048, 1048576, 1073741824)
    """
    m = _SIZE.match(text)
    if m is None:
        raise SchemaError(f"cannot read {text!r} as a file size", hint="e.g. '128mb' or 1048576")
    return int(m.group(1)) * 1024 ** "_kmgt".index((m.group(2) or "_").lower())


def deleted_fraction(f: AddFile) -> float:
    """The share of ``f``'s rows its deletion vector deletes (0 without one)."""
    if f.deletion_vector is None:
        return 0.0
    rows = num_records(f.stats)
    return 1.0 if not rows else f.deletion_vector.cardinality / rows


def plan_bins(
    files: list[AddFile], snapshot: Snapshot, target: int, *, purge: bool, zorder: bool
) -> list[list[AddFile]]:
    """Group the files to rewrite into bins (one output file each), partition by partition."""
    by_partition: dict[tuple[Any, ...], list[AddFile]] = defaultdict(list)
    for f in files:
        by_partition[_key(f)].append(f)
    bins: list[list[AddFile]] = []
    for group in by_partition.values():
        if zorder:
            bins.append(group)
            continue
        if purge:
            chosen = [f for f in group if f.deletion_vector is not None]
        else:
            chosen = [f for f in group if f.size < target or f.deletion_vector is not None]
        current: list[AddFile] = []
        size = 0
        for f in chosen:
            if current and size + f.size > target:
                bins.append(current)
                current, size = [], 0
            current.append(f)
            size += f.size
        if current:
            bins.append(current)
    # A lone file without a DV would be rewritten as itself: skip it (not for REORG).
    return [b for b in bins if zorder or len(b) > 1 or b[0].deletion_vector is not None]


def _rewrite(
    ctx: RunContext,
    snapshot: Snapshot,
    bins: list[list[AddFile]],
    zorder: tuple[str, ...],
    per_file: int | None = None,
    provider: str | None = None,
) -> list[AddFile]:
    """Write each bin's live rows as one file (Spark groups rows by bin in one job), or as
    files of ``per_file`` rows; new files carry ``provider`` as their clustering provider."""

    files = [f for b in bins for f in b]
    keys = _bin_keys(ctx, len(bins))
    mapping = [(f.path, keys[i], j) for i, b in enumerate(bins) for j, f in enumerate(b)]
    table_columns = [f["name"] for f in snapshot.schema_json["fields"]]
    file_column, row_column = snapshot_row_ids(snapshot)
    # Helper names fresh against the table's columns: a user column "_txsql_bin" survives.
    bin_key, order, z = fresh_names([_BIN, _ORDER, _Z], [*table_columns, file_column, row_column])
    bin_df = ctx.spark.createDataFrame(
        mapping, f"{quote(file_column)} STRING, {bin_key} BIGINT, {order} INT"
    )
    rows = scan_files(ctx.spark, snapshot, files, with_row_ids=True, with_lineage=True)
    rows = rows.join(F.broadcast(bin_df), file_column)
    parts = [F.col(quote(c)) for c in snapshot.partition_columns]
    rows = rows.repartition(len(bins), bin_key)
    if len(zorder) == 1:  # one column: its own order is the curve
        rows = rows.sortWithinPartitions(*parts, bin_key, F.col(quote(zorder[0])))
    elif zorder:
        buckets = fresh_names([f"{_Z}_{i}" for i in range(len(zorder))], rows.columns)
        rows = rows.withColumns(dict(zip(buckets, rank_buckets(zorder, bin_key))))
        rows = rows.withColumn(z, interleaved(buckets))
        rows = rows.sortWithinPartitions(*parts, bin_key, z)
    else:
        rows = rows.sortWithinPartitions(*parts, bin_key, order, F.col(quote(row_column)))
    # Copied rows keep their stable ids and commit versions (row tracking).
    rows = rows.select(*[F.col(quote(c)) for c in table_columns + lineage_columns(snapshot)])
    # Copies of committed rows: the column rules held when they were written.
    adds = write_data_files(
        ctx.spark,
        rows,
        snapshot.table_root,
        snapshot.metadata,
        max_records_per_file=per_file,
        enforce=False,
        protocol=snapshot.protocol,
    )
    return [replace(a, data_change=False, clustering_provider=provider) for a in adds]


def build_row_map(bins: list[list[AddFile]], adds: list[AddFile]) -> RowMap | None:
    """The row map of a bin-packing rewrite, or None if the output cannot be tied to it.

    Each bin is written by its own task (``_bin_keys``) in source order, so task ``i``'s
    file holds bin ``i``'s live rows in order. The map is only recorded when every file is
    accounted for: one file per bin at most, with exactly the bin's live row count.
    """
    by_task: dict[int, AddFile] = {}
    for add in adds:
        m = _PART.search(norm_path(add.path))
        if m is None or int(m.group(1)) in by_task:
            return None
        by_task[int(m.group(1))] = add
    if not set(by_task) <= set(range(len(bins))):
        return None
    out = []
    for i, b in enumerate(bins):
        sources = []
        for f in b:
            rows = num_records(f.stats)
            if rows is None:
                return None
            sources.append(Source(norm_path(f.path), rows, f.deletion_vector))
        live = sum(s.rows - (s.layout_dv.cardinality if s.layout_dv else 0) for s in sources)
        output = by_task.get(i)
        written = num_records(output.stats) if output is not None else 0
        if written != live:
            return None
        out.append(OutputBin(norm_path(output.path) if output else None, tuple(sources)))
    return RowMap(tuple(out))


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


def _check_full(statement: OptimizeTable, cluster_by: tuple[str, ...]) -> None:
    if statement.full and not cluster_by:
        raise SchemaError(
            f"OPTIMIZE {statement.target.display} FULL: FULL reclusters every file of a "
            "clustered table, and this table is not clustered",
            hint="Run OPTIMIZE without FULL, or cluster it first: ALTER TABLE t CLUSTER BY (c).",
        )


def _partition_predicate(statement: OptimizeTable, snapshot: Snapshot) -> Predicate:
    if statement.where is None:
        return TRUE
    predicate = to_predicate(statement.where, snapshot.schema_json)
    parts = {c.lower() for c in snapshot.partition_columns}
    extra = sorted(referenced_columns(predicate) - parts)
    if extra or has_opaque(predicate):
        raise SchemaError(
            f"OPTIMIZE WHERE may only filter on partition columns; "
            f"{', '.join(extra) or 'the condition'} is not one",
            hint="Partition columns: " + (", ".join(snapshot.partition_columns) or "none"),
        )
    return predicate


def _zorder_columns(statement: OptimizeTable, snapshot: Snapshot) -> tuple[str, ...]:
    if statement.zorder and "clustering" in (snapshot.protocol.writer_features or ()):
        raise SchemaError(
            f"ZORDER BY cannot run on {statement.target.display}: it is a clustered table "
            "(liquid clustering), whose layout its clustering columns decide "
            "[DELTA_CLUSTERING_WITH_ZORDER_BY]",
            hint="Run OPTIMIZE without ZORDER BY (txsql compacts the files no clustering "
            "laid out), or cluster with Delta Spark.",
        )
    names = {f["name"].lower(): f["name"] for f in snapshot.schema_json["fields"]}
    parts = {c.lower() for c in snapshot.partition_columns}
    out = []
    for column in statement.zorder:
        if column.lower() not in names:
            raise SchemaError(
                f"ZORDER BY column {column} is not a column of {statement.target.display}"
            )
        if column.lower() in parts:
            raise SchemaError(
                f"{column} is a partition column; ZORDER BY data columns only",
                hint="Rows of one partition already share its value.",
            )
        out.append(names[column.lower()])
    return tuple(out)


def _key(add: AddFile) -> tuple[Any, ...]:
    return tuple(sorted(add.partition_values.items()))
