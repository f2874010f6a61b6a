"""OPTIMIZE [WHERE partition-pred] [ZORDER BY (...)] and REORG TABLE ... APPLY (PURGE).

Bin-packing (Delta's ``OptimizeExecutor``): per partition, files smaller than the target
size, or carrying a deletion vector, are grouped in log order into bins of at most the
target size (``delta.targetFileSize``, else the Spark conf
``spark.databricks.delta.optimize.maxFileSize``, else 128 MB); each bin becomes one new file.
A bin of one file without a DV is left alone (nothing to gain). Rows deleted by DVs are
not copied, so rewritten files carry no DV. Every action has ``dataChange=false``: the
commit is checked under SnapshotIsolation, as in Delta.

Without ZORDER a bin's rows keep their order, so ``preserveInsertionOrder`` is true.
``ZORDER BY (a, b)`` rewrites every file of each selected partition as one bin and sorts
its rows by a Z-order value; a clustered table's OPTIMIZE does the same over its clustering
columns (``txsql.planner.operations.clustering``). The rewrite itself, and the row map that
lets DML racing it commit too: ``txsql.planner.operations.compaction_write``.

REORG ... APPLY (PURGE) rewrites only files that have a deletion vector.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from txsql.errors import SchemaError
from txsql.log import clustering, features
from txsql.log.actions import AddFile
from txsql.log.predicates import TRUE, Predicate, has_opaque, referenced_columns
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result, size_summary
from txsql.planner.metrics import OptimizeMetrics
from txsql.planner.operations.clustering import clustering_bins, clustering_order, rows_per_file
from txsql.planner.operations.compaction_write import rewrite_bins, row_map_of
from txsql.planner.sql.command_statements import OptimizeTable
from txsql.planner.sql.predicates import files_in_partitions, predicate_sql, to_predicate
from txsql.result import Result
from txsql.txn.isolation import row_level_enabled
from txsql.txn.rowlevel.compaction_races import can_write_dvs
from txsql.txn.rowlevel.row_map import ROW_MAP_PARAM, RowMap, encode_row_map
from txsql.txn.rowlevel.state import num_records

if TYPE_CHECKING:
    pass

DEFAULT_TARGET_SIZE = 128 * 1024 * 1024
TARGET_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)

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
        # A sort's row order costs a cache of the sorted rows and a narrow read of it
        # (+50-60 % on a 2M-row clustering OPTIMIZE): only where a racing DML can use it.
        ordered = (
            bool(zorder)
            and can_write_dvs(snapshot.protocol, snapshot.metadata)
            and row_level_enabled(snapshot.configuration)
        )
        groups = [[b] for b in bins] if statement.one_task else [bins]
        written = [
            rewrite_bins(
                ctx,
                snapshot,
                group,
                zorder,
                per_file,
                provider,
                one_task=statement.one_task,
                ordered=ordered,
            )
            for group in groups
        ]
        adds = [a for group_adds, _ in written for a in group_adds]
        row_map = row_map_of(log.store.fs, snapshot, groups, written, sorting=bool(zorder))
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
