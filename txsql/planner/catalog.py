"""Resolving table names and paths to Delta logs and snapshots."""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import TYPE_CHECKING, Any

from txsql.engine.write import STAGING_DIR
from txsql.errors import (
    NonEmptyLocationError,
    SqlError,
    TableExistsError,
    TableNotFoundError,
    VersionNotFoundError,
)
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.sql.statements import TableRef
from txsql.storage.factory import file_io_for
from txsql.storage.paths import join, parse_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REGISTRY = "_txsql_catalog.json"  # the old single-file registry: read, never written
REGISTRY_DIR = "_txsql_catalog"  # one <name>.json per registered name, put-if-absent
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


class Catalog:
    """Maps table names to locations under a warehouse directory.

    A name maps to ``<warehouse>/<name>`` unless CREATE TABLE registered another location
    for it. Every CREATE of a name claims it with a put-if-absent write of
    ``<warehouse>/_txsql_catalog/<name>.json``: two processes can never both register a
    name (a read-modify-write of one shared file lost registrations under concurrency).
    Warehouses made by older txsql keep their ``_txsql_catalog.json``; it is still read.
    """

    def __init__(self, warehouse: str) -> None:
        # A local directory or an object-store prefix; entries go through its FileIO
        # (conditional PUTs on object stores, so CREATE stays put-if-absent there too).
        location = parse_location(warehouse)
        self.warehouse = location.root
        self._local = location.is_local
        self._fs = file_io_for(location)
        self._logs: dict[str, DeltaLog] = {}
        # Session temp views over txsql tables (lower-case name -> their sqlglot query):
        # resolved again by each statement that names them (see planner/operations/views).
        self.views: dict[str, Any] = {}

    def location(self, ref: TableRef) -> str:
        if ref.path is not None:
            return parse_location(ref.path).root
        name = self._check_name(ref).lower()
        return self.registered_location(name) or join(self.warehouse, name)

    def registered_location(self, name: str) -> str | None:
        """The location registered for ``name`` (lower case), if any."""
        entry = self._entry(name.lower())
        if entry is not None:
            return entry
        return self._legacy_registry().get(name.lower())

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

    def claim(self, ref: TableRef, location: str) -> bool:
        """Register ``ref``'s name for ``location`` unless it is registered elsewhere.

        Returns True if this call created the registration, False if the name was already
        registered for the same location (a CREATE racing ours, or a retry: the version-0
        commit decides which of them wins).

        Raises:
            TableExistsError: the name is registered for another location.
        """
        name = self._check_name(ref).lower()
        wanted = parse_location(location).root
        legacy = self._legacy_registry().get(name)
        if legacy is not None and legacy != wanted:
            raise self._taken(ref, legacy)
        # A table in its default place is stored relative to the warehouse, so a copied or
        # moved warehouse keeps pointing at its own tables, never at the original's.
        stored = name if wanted == join(self.warehouse, name) else wanted
        body = json.dumps({"name": name, "location": stored}, sort_keys=True).encode()
        try:
            self._fs.write_if_absent(self._entry_path(name), body)
        except FileExistsError:
            registered = self._entry(name)
            if registered is not None and registered != wanted:
                raise self._taken(ref, registered) from None
            return False
        return True

    def release(self, ref: TableRef, location: str) -> None:
        """Undo a :meth:`claim` of ours whose CREATE failed before any table existed."""
        name = self._check_name(ref).lower()
        if self._entry(name) != parse_location(location).root:
            return
        if DeltaLog.for_path(location).exists():
            return  # a racing CREATE to the same location won: the entry is right
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete(self._entry_path(name))

    def register(self, ref: TableRef, location: str) -> None:
        """Register a name for a location (refused if it is registered elsewhere)."""
        self.claim(ref, location)

    def names(self) -> list[str]:
        """Tables in the warehouse (directories with a log) and registered ones."""
        found = set(self._legacy_registry())
        for status in self._fs.list_dir(join(self.warehouse, REGISTRY_DIR)):
            if status.name.endswith(".json") and not status.name.startswith("."):
                name = status.name[: -len(".json")]
                location = self._entry(name)
                if location is not None and DeltaLog.for_path(location).exists():
                    found.add(name)
        # Unregistered table directories (copied in, or made by other writers): local
        # warehouses only; on an object store every txsql CREATE registers its name.
        if self._local and os.path.isdir(self.warehouse):
            for entry in os.scandir(self.warehouse):
                if entry.is_dir() and os.path.isdir(os.path.join(entry.path, "_delta_log")):
                    found.add(entry.name)
        return sorted(found)

    def _taken(self, ref: TableRef, registered: str) -> TableExistsError:
        return TableExistsError(
            f"table {ref.display} is already registered for location {registered}",
            hint="Pick another name, or use that table. If no table exists there (a CREATE "
            f"that crashed), delete {self._entry_path(ref.display.lower())} and retry.",
        )

    def _entry_path(self, name: str) -> str:
        return join(self.warehouse, REGISTRY_DIR, f"{name}.json")

    def _entry(self, name: str) -> str | None:
        try:
            data = json.loads(self._fs.read(self._entry_path(name)))
        except FileNotFoundError:
            return None
        except ValueError:
            # A torn entry cannot exist (write_if_absent links a complete temp file), but
            # never guess a location from a damaged one.
            raise SqlError(
                f"the catalog entry {self._entry_path(name)} is damaged",
                hint="Delete the file and CREATE TABLE ... LOCATION again.",
            ) from None
        location = data.get("location") if isinstance(data, dict) else None
        if not location:
            return None
        if "/" not in str(location) and ":" not in str(location):
            return join(self.warehouse, str(location))  # relative: a managed table
        return str(location)

    def _legacy_registry(self) -> dict[str, str]:
        path = join(self.warehouse, REGISTRY)
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


def check_location_empty(location: str) -> None:
    """Refuse to CREATE a table in a directory that holds anything but a Delta log.

    Delta refuses such a location too: the files would look like orphans of the new table
    (VACUUM deletes orphans). An existing ``_delta_log`` directory is accepted (a racing
    or crashed CREATE made it; the version-0 commit decides who created the table), and so
    is txsql's own ``_txsql_staging`` area.

    Raises:
        NonEmptyLocationError: naming the location and a few of the entries in it.
    """
    if not parse_location(location).is_local:
        _check_object_store_location_empty(location)
        return
    try:
        entries = sorted(os.listdir(location))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise NonEmptyLocationError(
            f"cannot create a table at {location}: it is a file, not a directory"
        ) from None
    if "_delta_log" in entries and os.path.isdir(os.path.join(location, "_delta_log")):
        return
    others = [e for e in entries if e != STAGING_DIR]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise NonEmptyLocationError(
            f"cannot create a table at {location}: the directory is not empty and holds no "
            f"Delta log (it contains {shown})"
        )


def _check_object_store_location_empty(location: str) -> None:
    """:func:`check_location_empty` for an object-store prefix (objects, no directories)."""
    root = parse_location(location).root
    fs = file_io_for(root)
    if fs.list_dir(join(root, "_delta_log")):
        return
    others = sorted(
        {f.name.split("/", 1)[0] for f in fs.list_tree(root)} - {STAGING_DIR, "_delta_log"}
    )
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise NonEmptyLocationError(
            f"cannot create a table at {root}: objects already exist under it and it holds "
            f"no Delta log (it contains {shown})"
        )


def claim_location(location: str) -> bool:
    """Mark ``location`` as a table being created (an empty ``_delta_log`` directory).

    Made before a CTAS writes its data files, so a CREATE racing ours to the same place
    sees a Delta log being created rather than a non-empty directory of strangers' files.
    Returns whether the table directory itself existed before.
    """
    if not parse_location(location).is_local:
        return True  # object stores have no directories to claim (or to clean up)
    existed = os.path.isdir(location)
    os.makedirs(os.path.join(location, "_delta_log"), exist_ok=True)
    return existed


def release_location(location: str, remove_root: bool) -> None:
    """Undo :func:`claim_location` after a failed CREATE: remove what is left empty.

    ``rmdir`` only removes empty directories, so a table another CREATE committed there
    (or anything else in the directory) is never touched; the table directory itself
    only if the CREATE made it.
    """
    if not parse_location(location).is_local:
        return
    directories = [os.path.join(location, "_delta_log")] + ([location] if remove_root else [])
    for directory in directories:
        try:
            os.rmdir(directory)
        except OSError:
            return
