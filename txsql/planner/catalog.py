"""Resolving table names and paths to Delta logs and snapshots."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

from txsql.errors import SqlError, TableNotFoundError, VersionNotFoundError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.statements import TableRef
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.paths import parse_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REGISTRY = "_txsql_catalog.json"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


class Catalog:
    """Maps table names to locations under a warehouse directory.

    A name maps to ``<warehouse>/<name>`` unless CREATE TABLE ... LOCATION registered an
    external location for it (kept in ``<warehouse>/_txsql_catalog.json``).
    """

    def __init__(self, warehouse: str) -> None:
        self.warehouse = parse_location(warehouse).path
        self._fs = LocalFileIO()
        self._logs: dict[str, DeltaLog] = {}

    def location(self, ref: TableRef) -> str:
        if ref.path is not None:
            return parse_location(ref.path).path
        name = self._check_name(ref)
        registered = self._registry().get(name.lower())
        return registered or os.path.join(self.warehouse, name.lower())

    def log(self, ref: TableRef) -> DeltaLog:
        location = self.location(ref)
        if location not in self._logs:
            self._logs[location] = DeltaLog.for_path(location)
        return self._logs[location]

    def exists(self, ref: TableRef) -> bool:
        return self.log(ref).exists()

    def existing_log(self, ref: TableRef) -> DeltaLog:
        log = self.log(ref)
        if not log.exists():
            raise TableNotFoundError(
                f"table {ref.display} does not exist (looked in {log.table_root})"
            )
        return log

    def snapshot(self, ref: TableRef, spark: SparkSession | None = None) -> Snapshot:
        """The snapshot a reference names, honouring VERSION / TIMESTAMP AS OF."""
        log = self.existing_log(ref)
        if ref.version is not None:
            return log.snapshot(ref.version)
        if ref.timestamp is not None:
            return log.snapshot_at_timestamp(timestamp_ms(ref.timestamp, spark))
        return log.snapshot()

    def register(self, ref: TableRef, location: str) -> None:
        name = self._check_name(ref).lower()
        registry = self._registry()
        registry[name] = parse_location(location).path
        path = os.path.join(self.warehouse, REGISTRY)
        self._fs.write(path, json.dumps(registry, indent=1, sort_keys=True).encode())

    def names(self) -> list[str]:
        """Tables in the warehouse (directories with a log) and registered external ones."""
        found = set(self._registry())
        if os.path.isdir(self.warehouse):
            for entry in os.scandir(self.warehouse):
                if entry.is_dir() and os.path.isdir(os.path.join(entry.path, "_delta_log")):
                    found.add(entry.name)
        return sorted(found)

    def _registry(self) -> dict[str, str]:
        path = os.path.join(self.warehouse, REGISTRY)
        try:
            data: dict[str, str] = json.loads(self._fs.read(path))
        except FileNotFoundError:
            return {}
        return data

    @staticmethod
    def _check_name(ref: TableRef) -> str:
        name = ref.name or ""
        if not _NAME.match(name):
            raise SqlError(
                f"invalid table name {name!r}",
                hint="Use letters, digits and underscores, or address a path as delta.`/path`.",
            )
        return name


def timestamp_ms(expression: str, spark: SparkSession | None) -> int:
    """Milliseconds since the epoch of a TIMESTAMP AS OF value (a Spark SQL expression).

    Spark evaluates it, so any Spark timestamp expression works (``current_timestamp() -
    INTERVAL 1 HOUR``); literals without a zone are read in the session time zone (UTC).
    """
    if spark is None:
        raise VersionNotFoundError("TIMESTAMP AS OF needs a Spark session to evaluate")
    try:
        row = spark.sql(f"SELECT unix_micros(CAST({expression} AS TIMESTAMP)) AS us").first()
    except Exception as e:
        raise SqlError(
            f"cannot read {expression} as a timestamp: {str(e).splitlines()[0]}",
            hint="Use a literal like '2026-01-31 12:00:00' or a timestamp expression.",
        ) from None
    if row is None or row["us"] is None:
        raise SqlError(f"{expression} is not a valid timestamp", hint="e.g. '2026-01-31 12:00:00'")
    return int(row["us"]) // 1000


def sql_string(text: str) -> str:
    r"""Quote ``text`` as a Spark SQL string literal.

    >>> print(sql_string("it's"))
    'it\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
