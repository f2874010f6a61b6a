"""Helpers the overwrite and maintenance statements share: removes, scans of a file subset,
row counts from stats, and the Result of a commit."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from txsql.engine.scan import scan_snapshot
from txsql.log import row_tracking
from txsql.log.actions import AddFile
from txsql.log.partition_values import parse_partition_value
from txsql.log.schema import parse_schema, physical_name
from txsql.log.snapshot import Snapshot
from txsql.result import Result
from txsql.txn.result import CommitResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def physical_records(add: AddFile) -> int | None:
    """``numRecords`` from the file's stats (rows in the Parquet file), if recorded."""
    if not add.stats:
        return None
    value = json.loads(add.stats).get("numRecords")
    return int(value) if isinstance(value, int) else None


def live_records(add: AddFile) -> int | None:
    """Rows of the file not deleted by its deletion vector, if stats say."""
    physical = physical_records(add)
    if physical is None:
        return None
    return physical - (add.deletion_vector.cardinality if add.deletion_vector else 0)


def total_records(adds: Iterable[AddFile]) -> int:
    return sum(live_records(a) or 0 for a in adds)


def scan_files(
    spark: SparkSession,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    *,
    with_row_ids: bool = False,
    with_lineage: bool = False,
    stored_lineage: bool = False,
) -> DataFrame:
    """The live rows of just ``files`` of ``snapshot`` (deletion vectors applied); with
    lineage, their stable row ids too (see :func:`~txsql.engine.scan.scan_snapshot`)."""
    return scan_snapshot(
        spark,
        replace(snapshot, files=tuple(files)),
        with_row_ids=with_row_ids,
        with_lineage=with_lineage,
        stored_lineage=stored_lineage,
    )


def lineage_columns(snapshot: Snapshot) -> list[str]:
    """The materialized row id and row commit version columns a copy of this table's rows
    writes on (none unless the table keeps stable row ids)."""
    return list(row_tracking.materialized_columns(snapshot.configuration) or ())


def partition_key(add: AddFile, snapshot: Snapshot) -> tuple[Any, ...]:
    """The file's typed partition values in partition-column order (comparable across
    writers that serialize values differently)."""
    fields = {f.name.lower(): f for f in parse_schema(snapshot.metadata.schema_string).fields}
    values = {k.lower(): v for k, v in add.partition_values.items()}
    mode = snapshot.column_mapping_mode  # column mapping keys partitionValues physically
    return tuple(
        parse_partition_value(
            values.get(physical_name(fields[c.lower()], mode).lower()), fields[c.lower()].type
        )
        for c in snapshot.partition_columns
    )


def size_summary(files: Sequence[AddFile]) -> dict[str, int | float | None]:
    """Delta's OPTIMIZE ``filesAdded`` / ``filesRemoved`` summary."""
    sizes = [f.size for f in files]
    return {
        "min": min(sizes) if sizes else None,
        "max": max(sizes) if sizes else None,
        "avg": (sum(sizes) / len(sizes)) if sizes else 0.0,
        "totalFiles": len(sizes),
        "totalSize": sum(sizes),
    }


def commit_result(
    text: str,
    table: str,
    operation: str,
    committed: CommitResult | None,
    read_version: int | None,
    metrics: dict[str, int] | None = None,
    *,
    df: Any = None,
    message: str = "",
) -> Result:
    """The Result of a statement that committed (or staged, inside BEGIN ... COMMIT)."""
    if committed is None:
        return Result(
            text,
            operation,
            read_version=read_version,
            table=table,
            metrics=dict(metrics or {}),
            df=df,
            message=message or "staged; COMMIT to write it",
        )
    info = committed.commit_info
    return Result(
        text,
        info.operation or operation,
        version=committed.version,
        read_version=committed.read_version,
        table=table,
        metrics=dict(metrics or {}),
        operation_metrics=dict(info.operation_metrics or {}),
        df=df,
        message=message,
    )
