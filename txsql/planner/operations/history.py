"""DESCRIBE HISTORY: the commit log as rows with Delta's column names."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from txsql.log.deltalog import DeltaLog
from txsql.planner.context import RunContext
from txsql.planner.sql.statements import DescribeHistory
from txsql.result import Result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
                "userId": extra.get("userId"),
                "userName": extra.get("userName"),
                "operation": info.operation if info else None,
                "operationParameters": _strings(info.operation_parameters if info else None),
                "job": _text(extra.get("job")),
                "notebook": _text(extra.get("notebook")),
                "clusterId": extra.get("clusterId"),
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
    rows: list[Any] = list(history_rows(log, limit))
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def _strings(values: dict[str, Any] | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {k: v if isinstance(v, str) else str(v) for k, v in values.items()}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
