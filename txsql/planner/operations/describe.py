"""DESCRIBE DETAIL: one row about the table, with Delta's column names and types."""

from __future__ import annotations

import datetime as dt

from txsql.log import features
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.sql.statements import DescribeDetail
from txsql.result import Result

DETAIL_SCHEMA = (
    "format STRING, id STRING, name STRING, description STRING, location STRING, "
    "createdAt TIMESTAMP, lastModified TIMESTAMP, partitionColumns ARRAY<STRING>, "
    "clusteringColumns ARRAY<STRING>, numFiles BIGINT, sizeInBytes BIGINT, "
    "properties MAP<STRING, STRING>, minReaderVersion INT, minWriterVersion INT, "
    "tableFeatures ARRAY<STRING>, statistics MAP<STRING, BIGINT>"
)


def run_describe_detail(ctx: RunContext, statement: DescribeDetail, text: str) -> Result:
    snapshot = ctx.snapshot(statement.target)
    row = detail_row(snapshot, statement.target.name)
    df = ctx.spark.createDataFrame([row], DETAIL_SCHEMA)
    return Result(
        text,
        "DESCRIBE DETAIL",
        version=snapshot.version,
        table=statement.target.display,
        df=df,
    )


def detail_row(snapshot: Snapshot, name: str | None) -> dict[str, object]:
    """The DESCRIBE DETAIL values of ``snapshot`` (``name`` as the catalog knows it)."""
    metadata = snapshot.metadata
    protocol = snapshot.protocol
    created = metadata.created_time
    table_features = sorted(features.reader_features(protocol) | features.writer_features(protocol))
    clustering = metadata.configuration.get("clusteringColumns")
    dvs = [f.deletion_vector for f in snapshot.files if f.deletion_vector is not None]
    return {
        "format": "delta",
        "id": metadata.id,
        "name": name if name is not None else metadata.name,
        "description": metadata.description,
        "location": snapshot.table_root,
        "createdAt": _utc(created) if created is not None else None,
        "lastModified": _utc(snapshot.commit_timestamp) if snapshot.commit_timestamp else None,
        "partitionColumns": list(metadata.partition_columns),
        "clusteringColumns": [c for c in (clustering or "").split(",") if c],
        "numFiles": len(snapshot.files),
        "sizeInBytes": sum(f.size for f in snapshot.files),
        "properties": dict(metadata.configuration),
        "minReaderVersion": protocol.min_reader_version,
        "minWriterVersion": protocol.min_writer_version,
        "tableFeatures": table_features,
        "statistics": {
            "numRowsDeletedByDeletionVectors": sum(d.cardinality for d in dvs),
            "numDeletionVectors": len(dvs),
        },
    }


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
