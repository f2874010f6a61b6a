"""Resolving table names and paths to Delta logs and snapshots.

The format of the catalog's entry files is :mod:`txsql.planner.catalog_entries`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from txsql.errors import (
    SqlError,
    TableExistsError,
    TableNotFoundError,
)
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.catalog_entries import REGISTRY, CatalogEntry, EntryStore
from txsql.planner.locations import (
    check_location_empty,
    claim_location,
    release_location,
    sql_string,
    timestamp_ms,
)
from txsql.planner.schema_catalog import (
    DEFAULT_SCHEMA,
    IDENTIFIER,
    TABLE_NAME,
    SchemaCatalog,
    SchemaInfo,
    check_identifier,
)
from txsql.planner.sql.refs import TableRef
from txsql.storage.factory import file_io_for
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import join, parse_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_SCHEMA",
    "Catalog",
    "QualifiedName",
    "SchemaCatalog",
    "SchemaInfo",
    "check_identifier",
    "check_location_empty",
    "claim_location",
    "release_location",
    "sql_string",
    "timestamp_ms",
]


@dataclass(frozen=True, slots=True)
class QualifiedName:
    """A table name resolved against the catalog: its schema and its table name."""

    schema: str
    table: str

    @property
    def key(self) -> str:
        """The catalog key: ``t`` in the default schema (as before schemas), else ``s.t``."""
        return self.table if self.schema == DEFAULT_SCHEMA else f"{self.schema}.{self.table}"


# How many tables' logs (each with its newest snapshot) a catalog keeps in memory.
MAX_CACHED_LOGS = 64


class Catalog:
    """Maps table names (``t`` or ``schema.t``) to locations under a warehouse directory.

    A managed table lives at ``<warehouse>/<t>`` (schema ``default``) or
    ``<warehouse>/<schema>.db/<t>`` (Spark's layout); CREATE TABLE ... LOCATION registers
    an external one anywhere. Every CREATE of a name claims it with a put-if-absent write
    of ``<warehouse>/_txsql_catalog/<key>.json``: two processes can never both register a
    name (a read-modify-write of one shared file lost registrations under concurrency).
    Schemas are ``_txsql_catalog/_schemas/<schema>.json``; ``default`` always exists.
    Warehouses made by older txsql keep their ``_txsql_catalog.json``; it is still read.
    All catalog files go through one :class:`FileIO` (``fs``).
    """

    def __init__(self, warehouse: str, fs: FileIO | None = None) -> None:
        # A local directory or an object-store prefix; entries go through its FileIO
        # (conditional PUTs on object stores, so CREATE stays put-if-absent there too).
        location = parse_location(warehouse)
        self.warehouse = location.root
        self._local = location.is_local
        self._fs: FileIO = fs if fs is not None else file_io_for(location)
        # Each log caches its newest snapshot (a table's whole file list): keep the most
        # recently used ones only, so a session that touches many tables stays bounded. An
        # evicted log is read again from storage when named again.
        self._logs: OrderedDict[str, DeltaLog] = OrderedDict()
        self._logs_lock = threading.Lock()  # idle maintenance shares the catalog
        self._store = EntryStore(self.warehouse, self._fs)
        self.schemas = SchemaCatalog(self.warehouse, self._fs)
        self.current_schema = DEFAULT_SCHEMA  # USE changes it, per session
        # Session temp views over txsql tables (lower-case name -> their sqlglot query):
        # resolved again by each statement that names them (see planner/operations/views).
        self.views: dict[str, Any] = {}

    # --- names ------------------------------------------------------------------------

    def qualify(self, ref: TableRef) -> QualifiedName:
        """The schema and table ``ref`` names (the current schema if it names none).

        Raises:
            SqlError: not a valid name. SchemaNotFoundError: the schema does not exist.
        """
        parts = (ref.name or "").split(".")
        schema_ok = len(parts) == 1 or (len(parts) == 2 and IDENTIFIER.match(parts[0]))
        if not schema_ok or not TABLE_NAME.match(parts[-1]):
            raise SqlError(
                f"invalid table name {ref.name!r}",
                hint="Use table or schema.table (a schema is letters, digits and underscores; "
                "a quoted table name may hold other characters but no . / \\ : % # ?), or "
                "address a path as delta.`/path`.",
            )
        schema = parts[0].lower() if len(parts) == 2 else self.current_schema
        name = QualifiedName(schema, parts[-1].lower())
        self.schema(schema)  # raises SchemaNotFoundError
        return name

    def location(self, ref: TableRef) -> str:
        if ref.path is not None:
            return parse_location(ref.path).root
        name = self.qualify(ref)
        entry = self._resolve(name)
        return entry.location if entry is not None else self.default_location(name)

    def default_location(self, name: QualifiedName) -> str:
        """Where a managed table of this name lives."""
        if name.schema == DEFAULT_SCHEMA:
            return join(self.warehouse, name.table)
        return join(self.schema(name.schema).location, name.table)

    def registered_location(self, name: str) -> str | None:
        """The location registered for the table ``name`` (``t`` or ``s.t``), if any."""
        entry = self._resolve(self.qualify(TableRef(name=name)))
        return entry.location if entry is not None else None

    def is_managed(self, ref: TableRef) -> bool:
        """Whether DROP TABLE deletes the table's files (a managed table), or only its name."""
        entry = self._resolve(self.qualify(ref))
        return entry is None or entry.managed

    def log(self, ref: TableRef) -> DeltaLog:
        location = self.location(ref)
        with self._logs_lock:
            log = self._logs.get(location)
            if log is None:
                log = self._logs[location] = DeltaLog.for_path(location)
            self._logs.move_to_end(location)
            while len(self._logs) > MAX_CACHED_LOGS:
                self._logs.popitem(last=False)
            return log

    def forget(self, location: str) -> None:
        """Drop the cached log of a table whose files were deleted (DROP TABLE)."""
        with self._logs_lock:
            self._logs.pop(parse_location(location).root, None)

    def exists(self, ref: TableRef) -> bool:
        return self.log(ref).exists() and self._renamed_to(ref) is None

    def existing_log(self, ref: TableRef) -> DeltaLog:
        log = self.log(ref)
        if not log.exists():
            raise TableNotFoundError(
                f"table {ref.display} does not exist (looked in {log.table_root})"
            )
        renamed = self._renamed_to(ref)
        if renamed is not None:
            raise TableNotFoundError(
                f"table {ref.display} does not exist: its files at {log.table_root} belong "
                f"to {renamed} (ALTER TABLE ... RENAME TO keeps a table's files in place)",
                hint=f"Use {renamed}.",
            )
        return log

    def check_default_location_free(self, ref: TableRef) -> None:
        """Refuse a CREATE of ``ref`` in its managed place if a renamed table still lives there.

        Raises:
            TableExistsError: ``ALTER TABLE ref RENAME TO other`` left ``other``'s files at
                ``ref``'s managed location (renames never move files).
        """
        renamed = self._renamed_to(ref)
        if renamed is not None:
            location = self.default_location(self.qualify(ref))
            raise TableExistsError(
                f"cannot create {ref.display} at {location}: the table {renamed} (renamed from "
                f"{ref.display}) still lives there",
                hint=f"Give {ref.display} a LOCATION elsewhere, or pick another name.",
            )

    def _renamed_to(self, ref: TableRef) -> str | None:
        """The name that owns an unregistered name's managed directory (after a RENAME)."""
        if ref.path is not None:
            return None
        name = self.qualify(ref)
        if self._resolve(name) is not None:
            return None
        default = self.default_location(name)
        for key, entry in self._store.read_all().items():
            if entry.location == default and key != name.key:
                return key
        return None

    def snapshot(self, ref: TableRef, spark: SparkSession | None = None) -> Snapshot:
        """The snapshot a reference names, honouring VERSION / TIMESTAMP AS OF."""
        log = self.existing_log(ref)
        if ref.version is not None:
            return log.snapshot(ref.version)
        if ref.timestamp is not None:
            return log.snapshot_at_timestamp(timestamp_ms(ref.timestamp, spark))
        return log.snapshot()

    # --- registrations ----------------------------------------------------------------

    def claim(self, ref: TableRef, location: str, managed: bool | None = None) -> bool:
        """Register ``ref``'s name for ``location`` unless it is registered elsewhere.

        Returns True if this call created the registration, False if the name was already
        registered for the same location (a CREATE racing ours, or a retry: the version-0
        commit decides which of them wins). ``managed`` defaults to "``location`` is the
        name's managed location".

        Raises:
            TableExistsError: the name is registered for another location.
        """
        name = self.qualify(ref)
        wanted = parse_location(location).root
        legacy = self._store.legacy().get(name.key)
        if legacy is not None and legacy != wanted:
            raise self._taken(ref, legacy)
        default = self.default_location(name)
        body = self._store.encode(
            name.key, wanted, wanted == default if managed is None else managed
        )
        try:
            self._fs.write_if_absent(self._store.path(name.key), body)
        except FileExistsError:
            registered = self._store.read(name.key)
            if registered is not None and registered.location != wanted:
                raise self._taken(ref, registered.location) from None
            return False
        return True

    def release(self, ref: TableRef, location: str) -> None:
        """Undo a :meth:`claim` of ours whose CREATE failed before any table existed."""
        name = self.qualify(ref)
        entry = self._store.read(name.key)
        if entry is None or entry.location != parse_location(location).root:
            return
        if DeltaLog.for_path(location).exists():
            return  # a racing CREATE to the same location won: the entry is right
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete(self._store.path(name.key))

    def register(self, ref: TableRef, location: str) -> None:
        """Register a name for a location (refused if it is registered elsewhere)."""
        self.claim(ref, location)

    def unregister(self, ref: TableRef) -> bool:
        """Remove ``ref``'s registration; False if it had none (an unregistered directory)."""
        key = self.qualify(ref).key
        if key in self._store.legacy():
            raise SqlError(
                f"table {ref.display} is registered in the old single-file catalog "
                f"{join(self.warehouse, REGISTRY)}",
                hint="Remove its entry from that file by hand (txsql never rewrites it).",
            )
        try:
            self._fs.delete(self._store.path(key))
        except FileNotFoundError:
            return False
        return True

    def rename(self, old: TableRef, new: TableRef) -> str:
        """Point ``new``'s name at ``old``'s table and forget ``old``; returns the location.

        Catalog only: the files stay where they are. The new entry is written put-if-absent
        first, then the old one is deleted, so a crash in between leaves the table under
        both names, never under none.

        Raises:
            TableExistsError: ``new`` names an existing or registered table.
        """
        source = self.qualify(old)
        target = self.qualify(new)
        location = self.location(old)
        if target == source:
            raise TableExistsError(f"table {new.display} already exists (it is {old.display})")
        if self._resolve(target) is not None or self.exists(new):
            raise TableExistsError(
                f"cannot rename {old.display} to {new.display}: {new.display} already exists"
            )
        managed = self.is_managed(old)
        body = self._store.encode(target.key, location, managed)
        try:
            self._fs.write_if_absent(self._store.path(target.key), body)
        except FileExistsError:
            raise TableExistsError(
                f"cannot rename {old.display} to {new.display}: {new.display} was just created"
            ) from None
        self.unregister(old)
        return location

    def schema(self, name: str) -> SchemaInfo:
        """The schema ``name``; raises SchemaNotFoundError (see :class:`SchemaCatalog`)."""
        return self.schemas.get(name)

    def tables(self, schema: str) -> list[str]:
        """The table names (without schema) of ``schema`` that have a Delta log."""
        schema = self.schema(schema).name
        prefix = "" if schema == DEFAULT_SCHEMA else schema + "."
        out = []
        for key in self.names():
            if schema == DEFAULT_SCHEMA and "." not in key:
                out.append(key)
            elif prefix and key.startswith(prefix):
                out.append(key[len(prefix) :])
        return out

    def names(self) -> list[str]:
        """Catalog keys (``t``, ``s.t``) of registered tables and of unregistered Delta
        directories in the warehouse (older warehouses)."""
        entries = self._store.read_all()
        found = {k for k, e in entries.items() if DeltaLog.for_path(e.location).exists()}
        found |= set(self._store.legacy())
        claimed = {e.location for e in entries.values()}
        # Unregistered table directories (copied in, or made by other writers): local
        # warehouses only; on an object store every txsql CREATE registers its name.
        if self._local and os.path.isdir(self.warehouse):
            for entry in os.scandir(self.warehouse):
                if (
                    entry.is_dir()
                    and TABLE_NAME.match(entry.name)
                    and os.path.isdir(join(entry.path, "_delta_log"))
                    and entry.path not in claimed
                ):
                    found.add(entry.name.lower())
        return sorted(found)

    # --- entries ----------------------------------------------------------------------

    def _resolve(self, name: QualifiedName) -> CatalogEntry | None:
        """``name``'s registration; None for a name that maps to its managed location."""
        entry = self._store.read(name.key)
        if entry is not None:
            return entry
        legacy = self._store.legacy().get(name.key)
        if legacy is not None:
            return CatalogEntry(legacy, legacy == self.default_location(name))
        return None

    def _taken(self, ref: TableRef, registered: str) -> TableExistsError:
        return TableExistsError(
            f"table {ref.display} is already registered for location {registered}",
            hint="Pick another name, or use that table. If no table exists there (a CREATE "
            f"that crashed), delete {self._store.path(self.qualify(ref).key)} and retry.",
        )
