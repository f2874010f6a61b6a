"""DESCRIBE DETAIL (one row about the table) and DESCRIBE HISTORY (the commit log as rows),
both with Delta's column names and types."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from txsql.log import clustering, features
from txsql.log.deltalog import DeltaLog
from txsql.log.schema import parse_schema
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.sql.command_statements import DescribeDetail
from txsql.planner.sql.statements import DescribeHistory
from txsql.result import Result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
    clustered = clustering.clustering_columns(snapshot.domains) or []
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
        "clusteringColumns": clustering.logical_names(
            parse_schema(metadata.schema_string), clustered, snapshot.column_mapping_mode
        ),
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


HISTORY_SCHEMA = (
    "version BIGINT, timestamp TIMESTAMP, userId STRING, userName STRING, operation STRING, "
    "operationParameters MAP<STRING, STRING>, job STRING, notebook STRING, clusterId STRING, "
    "readVersion BIGINT, isolationLevel STRING, isBlindAppend BOOLEAN, "
    "operationMetrics MAP<STRING, STRING>, userMetadata STRING, engineInfo STRING"
)


def run_describe_history(ctx: RunContext, statement: DescribeHistory, text: str) -> Result:
    log = ctx.catalog.existing_log(statement.target)
    df = history_dataframe(ctx.spark, log, statement.limit)
    return Result(
        text,
        "DESCRIBE HISTORY",
        version=log.latest_version(),
        df=df,
        table=statement.target.display,
    )


def history_rows(log: DeltaLog, limit: int | None = None) -> list[dict[str, Any]]:
    """One dict per commit, newest first, keyed by Delta's DESCRIBE HISTORY columns."""
    rows = []
    for record in log.history(limit):
        info = record.commit_info
        extra = (info.extra or {}) if info else {}
        rows.append(
            {
                "version": record.version,
                "timestamp": dt.datetime.fromtimestamp(record.timestamp / 1000, dt.timezone.utc),
                "userId": _text(extra.get("userId")),
                "userName": _text(extra.get("userName")),
                "operation": info.operation if info else None,
                "operationParameters": _strings(info.operation_parameters if info else None),
                "job": _text(extra.get("job")),
                "notebook": _text(extra.get("notebook")),
                "clusterId": _text(extra.get("clusterId")),
                "readVersion": info.read_version if info else None,
                "isolationLevel": info.isolation_level if info else None,
                "isBlindAppend": info.is_blind_append if info else None,
                "operationMetrics": _strings(info.operation_metrics if info else None),
                "userMetadata": info.user_metadata if info else None,
                "engineInfo": info.engine_info if info else None,
            }
        )
    return rows


def history_dataframe(spark: SparkSession, log: DeltaLog, limit: int | None = None) -> DataFrame:
    """The commits as a DataFrame of local rows: built from Arrow, Spark keeps them as a
    local relation in the plan, and collecting it runs no Spark job (a list of Python rows
    becomes a parallelized RDD, and every collect of it a job)."""

    table = pa.Table.from_pylist(history_rows(log, limit), schema=_history_arrow_schema())
    return spark.createDataFrame(table, HISTORY_SCHEMA)


def _history_arrow_schema() -> Any:
    """:data:`HISTORY_SCHEMA` in Arrow."""

    text, texts = pa.string(), pa.map_(pa.string(), pa.string())
    return pa.schema(
        [
            ("version", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("userId", text),
            ("userName", text),
            ("operation", text),
            ("operationParameters", texts),
            ("job", text),
            ("notebook", text),
            ("clusterId", text),
            ("readVersion", pa.int64()),
            ("isolationLevel", text),
            ("isBlindAppend", pa.bool_()),
            ("operationMetrics", texts),
            ("userMetadata", text),
            ("engineInfo", text),
        ]
    )


def _strings(values: dict[str, Any] | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {k: v if isinstance(v, str) else str(v) for k, v in values.items()}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
