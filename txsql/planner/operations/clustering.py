"""Liquid clustering statements: CREATE TABLE ... CLUSTER BY and ALTER TABLE ... CLUSTER BY.

The clustering columns live in the ``delta.clustering`` domain (``txsql.log.clustering``)
and the table lists the writer features ``clustering`` and ``domainMetadata``. OPTIMIZE
then clusters the files no clustering laid out yet (``txsql.planner.operations.optimize``).
A clustering column needs min/max stats (that is what clustering is for), so it must be
among the columns the table collects stats for.
"""

from __future__ import annotations

import json
import math

from txsql.engine.file_stats import stats_leaves
from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log import clustering, properties, protocol_upgrade
from txsql.log.actions import Action, AddFile, DomainMetadata, Metadata, Protocol
from txsql.log.schema import parse_schema
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result, total_records
from txsql.planner.sql.command_statements import AlterClusterBy
from txsql.result import Result

CLUSTERING_FEATURES = ("clustering", "domainMetadata")


def clustered_table(
    protocol: Protocol, metadata: Metadata, columns: tuple[str, ...], table: str
) -> tuple[Protocol, DomainMetadata]:
    """The protocol and domain of a table clustered by ``columns`` (logical names).

    Raises:
        SchemaError: an unknown column, or one without stats.
        UnsupportedFeatureError: a partitioned table.
    """
    if metadata.partition_columns:
        raise UnsupportedFeatureError(
            f"{table} is partitioned; a table cannot be both partitioned and clustered",
            hint="Copy it into a new table created with CLUSTER BY and without PARTITIONED BY.",
        )
    mode = properties.column_mapping_mode(metadata.configuration).lower()
    paths = clustering.physical_paths(parse_schema(metadata.schema_string), columns, mode, table)
    with_stats = {path[0] for path, _ in stats_leaves(json.loads(metadata.schema_string), metadata)}
    missing = [c for c, p in zip(columns, paths) if p[0] not in with_stats]
    if missing:
        raise SchemaError(
            f"cannot cluster {table} by {', '.join(missing)}: the table collects no min/max "
            "stats for it, which clustering needs to skip files",
            hint="List it in delta.dataSkippingStatsColumns, or move it among the first "
            "delta.dataSkippingNumIndexedCols (32) columns.",
        )
    upgraded = protocol_upgrade.with_features(protocol, writer=CLUSTERING_FEATURES)
    return upgraded, clustering.domain(paths)


def run_alter_cluster_by(ctx: RunContext, statement: AlterClusterBy, text: str) -> Result:
    """``ALTER TABLE t CLUSTER BY (c, ...)`` sets the clustering columns (files already
    written keep their layout until OPTIMIZE); ``CLUSTER BY NONE`` keeps the domain with no
    columns, as Delta does, so OPTIMIZE only compacts."""
    txn, snapshot = ctx.begin_alter(statement.target)
    table = statement.target.display
    actions: list[Action] = []
    if statement.columns:
        protocol, domain = clustered_table(
            snapshot.protocol, snapshot.metadata, statement.columns, table
        )
        if protocol != snapshot.protocol:
            actions.append(protocol)
    elif clustering.clustering_columns(snapshot.domains) is None:
        raise SchemaError(f"{table} is not clustered", hint="Nothing to remove.")
    else:
        domain = clustering.domain([])
    actions.append(domain)
    txn.stage(actions)
    parameters = {"clusteringColumns": json.dumps(list(statement.columns))}
    committed = ctx.commit(txn, "CLUSTER BY", parameters, {})
    return commit_result(text, table, "CLUSTER BY", committed, txn.read_version)


def clustering_order(snapshot: Snapshot) -> tuple[str, ...]:
    """The logical clustering columns OPTIMIZE sorts by (none: not clustered, or NONE)."""
    paths = clustering.clustering_columns(snapshot.domains)
    if not paths:
        return ()
    mode = snapshot.column_mapping_mode
    return tuple(
        clustering.logical_names(parse_schema(snapshot.metadata.schema_string), paths, mode)
    )


def clustering_bins(files: list[AddFile], *, full: bool) -> list[list[AddFile]]:
    """What OPTIMIZE on a clustered table rewrites: the files no clustering laid out yet
    (all with FULL), as one group sorted along the curve and cut at the target size."""
    chosen = files if full else [f for f in files if f.clustering_provider is None]
    return [chosen] if chosen else []


def rows_per_file(files: list[AddFile], target_size: int) -> int | None:
    """Rows per output file for files of about ``target_size`` bytes, from the rows and
    bytes of ``files`` (None when their row counts are unknown)."""
    rows = total_records(files)
    size = sum(f.size for f in files)
    if not rows or not size:
        return None
    return max(1, math.ceil(rows * target_size / size))
