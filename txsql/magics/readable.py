"""Short, readable tables for results whose Delta shape is made for programs, not eyes.

The Result (``_txsql.df``, ``-o`` variables, the Python API) keeps Delta's exact shape;
only what the magic displays changes:

- OPTIMIZE / REORG: Delta returns ``(path, metrics struct<…16 fields…>)``; shown as one row
  of files and bytes removed and added, partitions, z-order columns and DVs purged.
- VACUUM: Delta returns the table path (or, for DRY RUN, the files); shown as the count and
  bytes deleted (DRY RUN: every file that would be deleted, with the count and bytes above).
- DESCRIBE HISTORY: Delta's 15 columns; shown as version, timestamp (UTC), operation and a
  one-line summary of the parameters and of the metrics (``--all-columns`` shows all 15).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from txsql.magics.render import Column, Fetched
from txsql.result import Result

Table = tuple[tuple[Column, ...], tuple[tuple[Any, ...], ...]]

HISTORY_COMPACT = ("version", "timestamp", "operation", "parameters", "metrics")
MAX_SUMMARY = 90  # characters of a parameters/metrics summary cell
# Parameters that are bookkeeping for txsql itself, not something a reader wants to see.
_HIDDEN_PARAMETERS = ("txsqlRowMap",)


def readable_table(result: Result, fetched: Fetched, *, all_columns: bool = False) -> Table | None:
    """The table to show instead of ``fetched``, or None to show ``fetched`` as it is."""
    if all_columns:
        return None
    operation = result.operation
    if operation in ("OPTIMIZE", "REORG"):
        return optimize_table(result, fetched)
    if operation == "VACUUM":
        return vacuum_table(result, fetched)
    if operation == "DESCRIBE HISTORY":
        return history_table(fetched)
    return None


def caption(result: Result) -> str | None:
    """A line above the table, for VACUUM DRY RUN (how many files, how many bytes)."""
    if result.operation != "VACUUM" or "numFilesToDelete" not in result.metrics:
        return None
    count = result.metrics["numFilesToDelete"]
    size = result.metrics.get("sizeOfDataToDelete")
    bytes_part = f" ({human_bytes(size)})" if size is not None else ""
    return f"DRY RUN: {count} file(s){bytes_part} would be deleted; nothing was deleted"


def human_bytes(size: int | None) -> str:
    """``1536`` → ``'1.5 KiB'``.

    >>> [human_bytes(n) for n in (0, 999, 1536, 5 * 1024**3)]
    ['0 B', '999 B', '1.5 KiB', '5.0 GiB']
    """
    if size is None:
        return "NULL"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def optimize_table(result: Result, fetched: Fetched) -> Table | None:
    names = [c.name for c in fetched.columns]
    if "metrics" not in names or len(fetched.rows) != 1:
        return None
    metrics = _as_dict(fetched.rows[0][names.index("metrics")])
    removed = _as_dict(metrics.get("filesRemoved"))
    added = _as_dict(metrics.get("filesAdded"))
    zorder = _as_dict(metrics.get("zOrderStats"))
    columns = (
        Column("files removed", "bigint"),
        Column("files added", "bigint"),
        Column("bytes removed", "string"),
        Column("bytes added", "string"),
        Column("partitions", "bigint"),
        Column("z-order by", "string"),
        Column("DVs purged", "bigint"),
    )
    row = (
        metrics.get("numFilesRemoved"),
        metrics.get("numFilesAdded"),
        human_bytes(removed.get("totalSize", 0)),
        human_bytes(added.get("totalSize", 0)),
        metrics.get("partitionsOptimized"),
        ", ".join(zorder.get("zOrderBy") or []) or "-",
        metrics.get("numDeletionVectorsRemoved"),
    )
    return columns, (row,)


def vacuum_table(result: Result, fetched: Fetched) -> Table | None:
    if "numFilesToDelete" in result.metrics:  # DRY RUN: the files, under their folder
        paths = [str(row[0]) for row in fetched.rows]
        if not paths:
            return None
        root = _common_folder(paths)
        relative = tuple((path[len(root) :].lstrip("/"),) for path in paths)
        return (Column(f"file (under {root})", "string"),), relative
    metrics = result.metrics
    columns = (
        Column("files deleted", "bigint"),
        Column("bytes deleted", "string"),
        Column("directories removed", "bigint"),
    )
    row = (
        metrics.get("numDeletedFiles"),
        human_bytes(metrics.get("sizeOfDeletedData")),
        metrics.get("numVacuumedDirectories"),
    )
    return columns, (row,)


def _common_folder(paths: list[str]) -> str:
    """The folder holding every path (the table root, or a partition folder).

    >>> _common_folder(["/w/t/a=1/p.parquet", "/w/t/b.parquet"])
    '/w/t'
    """
    folders = [path.rsplit("/", 1)[0] for path in paths]
    common = folders[0]
    for folder in folders[1:]:
        while common and not (folder == common or folder.startswith(common + "/")):
            common = common.rsplit("/", 1)[0] if "/" in common else ""
    return common


HISTORY_SUMMARY_COLUMNS = (
    Column("version", "bigint"),
    Column("timestamp", "UTC"),
    Column("operation", "string"),
    Column("parameters", "summary"),
    Column("metrics", "summary"),
)


def history_table(fetched: Fetched) -> Table | None:
    names = [c.name for c in fetched.columns]
    if not {"version", "timestamp", "operation"} <= set(names):
        return None
    rows = tuple(history_summary(dict(zip(names, values))) for values in fetched.rows)
    return HISTORY_SUMMARY_COLUMNS, rows


def history_summary(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """One DESCRIBE HISTORY row as :data:`HISTORY_SUMMARY_COLUMNS` show it."""
    parameters = {
        k: v
        for k, v in (row.get("operationParameters") or {}).items()
        if k not in _HIDDEN_PARAMETERS
    }
    operation = row.get("operation")
    if parameters.pop("txsqlMaintenance", None) == "true":
        operation = f"{operation} (idle maintenance)"
    return (
        row.get("version"),
        utc_text(row.get("timestamp")),
        operation,
        summary(parameters),
        summary(row.get("operationMetrics") or {}),
    )


def utc_text(value: Any) -> Any:
    """A timestamp as ``2026-11-24 07:22:16.123 UTC`` (naive values are local time).

    >>> utc_text(dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc))
    '2026-01-02 03:04:05.006 UTC'
    """
    if not isinstance(value, dt.datetime):
        return value
    # PySpark returns TIMESTAMP values as naive datetimes in the Python process's zone.
    moment = value.astimezone(dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def summary(values: Mapping[str, Any]) -> str:
    """``k=v, k=v`` of a map, cut at :data:`MAX_SUMMARY` characters.

    >>> summary({"mode": "Append", "partitionBy": "[]"})
    'mode=Append, partitionBy=[]'
    """
    text = ", ".join(f"{k}={_short(v)}" for k, v in values.items())
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if hasattr(value, "asDict"):
        as_dict: dict[str, Any] = value.asDict(recursive=False)
        return as_dict
    if isinstance(value, Mapping):
        return dict(value)
    return {}
