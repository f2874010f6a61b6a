"""The catalog's entry files: where they live, how an entry is encoded and decoded.

Split from :mod:`txsql.planner.catalog` (name resolution, CREATE/DROP/RENAME rules) so the
on-storage format is in one place: ``<warehouse>/_txsql_catalog/<key>.json`` written
put-if-absent by the catalog, locations inside the warehouse stored relative to it (a copied
warehouse keeps pointing at its own tables), and the old single-file ``_txsql_catalog.json``
of older warehouses, read and never written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from txsql.errors import SqlError
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import join

REGISTRY = "_txsql_catalog.json"  # the old single-file registry: read, never written
REGISTRY_DIR = "_txsql_catalog"  # one <name>.json per registered name, put-if-absent


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One registration: the table's location and whether DROP deletes its files."""

    location: str
    managed: bool


class EntryStore:
    """Reads and encodes the entry files of the catalog of ``warehouse`` on ``fs``."""

    def __init__(self, warehouse: str, fs: FileIO) -> None:
        self.warehouse = warehouse
        self._fs = fs

    def encode(self, key: str, location: str, managed: bool) -> bytes:
        """The entry file's bytes registering ``key`` for ``location``."""
        # A table in the warehouse is stored relative to it, so a copied or moved warehouse
        # keeps pointing at its own tables, never at the original's.
        prefix = self.warehouse.rstrip("/") + "/"
        stored = location[len(prefix) :] if location.startswith(prefix) else location
        entry = {"name": key, "location": stored, "managed": managed}
        return json.dumps(entry, sort_keys=True).encode()

    def read_all(self) -> dict[str, CatalogEntry]:
        """Every readable entry, by catalog key."""
        directory = join(self.warehouse, REGISTRY_DIR)
        out = {}
        for status in self._fs.list_dir(directory):
            if status.name.endswith(".json"):
                key = status.name[: -len(".json")]
                entry = self.read(key)
                if entry is not None:
                    out[key] = entry
        return out

    def path(self, key: str) -> str:
        return join(self.warehouse, REGISTRY_DIR, f"{key}.json")

    def read(self, key: str) -> CatalogEntry | None:
        """The entry of ``key``; None if there is none or it names no location."""
        try:
            data = json.loads(self._fs.read(self.path(key)))
        except FileNotFoundError:
            return None
        except ValueError:
            # A torn entry cannot exist (write_if_absent links a complete temp file), but
            # never guess a location from a damaged one.
            raise SqlError(
                f"the catalog entry {self.path(key)} is damaged",
                hint="Delete the file and CREATE TABLE ... LOCATION again.",
            ) from None
        location = data.get("location") if isinstance(data, dict) else None
        if not location:
            return None
        location = str(location)
        relative = not os.path.isabs(location) and ":" not in location
        if relative:
            location = join(self.warehouse, location)  # a table in the warehouse
        # Entries written before schemas had no "managed": relative ones were managed.
        return CatalogEntry(location, bool(data.get("managed", relative)))

    def legacy(self) -> dict[str, str]:
        """The old single-file registry (key -> location); empty if there is none."""
        path = join(self.warehouse, REGISTRY)
        try:
            data: dict[str, str] = json.loads(self._fs.read(path))
        except FileNotFoundError:
            return {}
        return data
