"""Schemas (databases) of a warehouse: one ``_txsql_catalog/_schemas/<name>.json`` each.

A schema's managed tables live in ``<warehouse>/<name>.db/<table>`` (Spark's layout) or
under the LOCATION it was created with. ``default`` always exists, is not stored, and
keeps ``<warehouse>/<table>`` for its tables. Every file goes through one :class:`FileIO`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass

from txsql.errors import SchemaNotFoundError, SqlError
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import join, parse_location

DEFAULT_SCHEMA = "default"
SCHEMA_DIR = "_txsql_catalog/_schemas"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A table name may be any quoted name (`back``tick`, `a b`) but for the characters that
# would change its catalog key or its directory: '.' separates schema and table, '/' and
# '\' nest directories, ':' '%' '#' '?' are URI syntax; no control characters, no
# leading or trailing space, at most 250 characters (its catalog entry is <name>.json).
TABLE_NAME = re.compile(r"^(?!\s)[^./\\:%#?\x00-\x1f\x7f]{1,250}(?<!\s)$")


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    name: str
    location: str  # where its managed tables go: <warehouse>/<name>.db unless LOCATION
    comment: str | None = None


def check_identifier(name: str, kind: str) -> str:
    """``name`` lower-cased if it is a valid schema/table identifier."""
    if not IDENTIFIER.match(name):
        raise SqlError(f"invalid {kind} name {name!r}", hint="Use letters, digits and underscores.")
    return name.lower()


class SchemaCatalog:
    """The schemas of the warehouse at ``warehouse`` (a local path or object-store root)."""

    def __init__(self, warehouse: str, fs: FileIO) -> None:
        self.warehouse = warehouse
        self._fs = fs

    def get(self, name: str) -> SchemaInfo:
        """The schema ``name``.

        Raises:
            SchemaNotFoundError: no such schema.
        """
        name = name.lower()
        if name == DEFAULT_SCHEMA:
            return SchemaInfo(DEFAULT_SCHEMA, self.warehouse, "default schema")
        try:
            data = json.loads(self._fs.read(self._path(name)))
        except FileNotFoundError:
            raise SchemaNotFoundError(
                f"schema {name} does not exist in the warehouse {self.warehouse}"
            ) from None
        except ValueError:
            raise SqlError(
                f"the catalog entry {self._path(name)} is damaged",
                hint="Delete the file and CREATE SCHEMA again.",
            ) from None
        location = str(data.get("location") or f"{name}.db")
        if not os.path.isabs(location) and ":" not in location:
            location = join(self.warehouse, location)  # relative: in the warehouse
        return SchemaInfo(name, location, data.get("comment"))

    def exists(self, name: str) -> bool:
        try:
            self.get(name)
        except SchemaNotFoundError:
            return False
        return True

    def create(self, name: str, comment: str | None, location: str | None) -> bool:
        """Register a schema (put-if-absent: one of two racing CREATEs wins); False if it
        already exists."""
        name = check_identifier(name, "schema")
        if name == DEFAULT_SCHEMA:
            return False
        # Without LOCATION the place is stored relative, so a copied warehouse keeps it.
        stored = parse_location(location).root if location is not None else f"{name}.db"
        body = json.dumps({"name": name, "comment": comment, "location": stored}, sort_keys=True)
        try:
            self._fs.write_if_absent(self._path(name), body.encode())
        except FileExistsError:
            return False
        return True

    def drop(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete(self._path(name.lower()))

    def names(self) -> list[str]:
        directory = join(self.warehouse, SCHEMA_DIR)
        found = {f.name[: -len(".json")] for f in self._fs.list_dir(directory)}
        return sorted({DEFAULT_SCHEMA} | {n for n in found if IDENTIFIER.match(n)})

    def _path(self, name: str) -> str:
        return join(self.warehouse, SCHEMA_DIR, f"{name}.json")
