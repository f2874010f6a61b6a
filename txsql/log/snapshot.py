"""An immutable view of a table at one version (the result of log replay)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from txsql.log.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)


@dataclass(frozen=True)
class Snapshot:
    """The reconciled state of the table rooted at ``table_root`` as of ``version``.

    ``files`` are the live adds, ``tombstones`` the surviving removes (for VACUUM),
    ``app_versions`` the latest ``txn`` version per app id (``transactions`` keeps the whole
    action), ``domains`` the live domain metadata. ``commit_timestamp`` is the in-commit
    timestamp when enabled, else the commit file's modification time (ms).
    """

    table_root: str
    version: int
    protocol: Protocol
    metadata: Metadata
    files: tuple[AddFile, ...]
    tombstones: tuple[RemoveFile, ...] = ()
    app_versions: dict[str, int] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_timestamp: int = 0
    commit_info: CommitInfo | None = None
    transactions: dict[str, SetTransaction] = field(default_factory=dict)

    @property
    def schema_json(self) -> dict[str, Any]:
        """The Spark StructType JSON of the table (logical names, with field metadata)."""
        result: dict[str, Any] = json.loads(self.metadata.schema_string)
        return result

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return self.metadata.partition_columns

    @property
    def configuration(self) -> dict[str, str]:
        return self.metadata.configuration

    @property
    def column_mapping_mode(self) -> str:
        return self.metadata.configuration.get("delta.columnMapping.mode", "none").lower()

    @property
    def num_records(self) -> int | None:
        """Logical row count from stats, or None when a file lacks ``numRecords``."""
        total = 0
        for f in self.files:
            if f.stats is None:
                return None
            n = json.loads(f.stats).get("numRecords")
            if n is None:
                return None
            total += n - (f.deletion_vector.cardinality if f.deletion_vector else 0)
        return total
