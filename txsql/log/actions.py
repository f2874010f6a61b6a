"""Delta log actions as frozen dataclasses (snake_case; wire names live in ``codec``).

Fields the protocol allows writers to add that we do not model are kept in ``extra`` so a
read-modify-write (e.g. re-adding a file with a new DV) preserves them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Union

from txsql.dv.descriptor import DeletionVectorDescriptor

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class Format:
    provider: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict)
    format: Format = field(default_factory=Format)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None
    extra: JsonDict | None = None

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    @property
    def key(self) -> tuple[str, str | None]:
        """The logical-file key of log replay: (path, DV unique id)."""
        return (self.path, self.dv_id)

    def to_remove(self, *, data_change: bool = True, timestamp: int | None = None) -> RemoveFile:
        """The ``remove`` of this logical file, as Delta Spark's ``removeWithTimestamp``."""
        return RemoveFile(
            path=self.path,
            deletion_timestamp=int(time.time() * 1000) if timestamp is None else timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=dict(self.partition_values),
            size=self.size,
            stats=self.stats,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
        )


@dataclass(frozen=True, slots=True)
class RemoveFile:
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    extra: JsonDict | None = None

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.path, self.dv_id)


@dataclass(frozen=True, slots=True)
class AddCDCFile:
    path: str
    partition_values: dict[str, str | None]
    size: int
    data_change: bool = False
    tags: dict[str, str] | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class SetTransaction:
    app_id: str
    version: int
    last_updated: int | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """Free-form provenance; the fields Delta Spark writes are named, the rest kept in extra."""

    timestamp: int | None = None
    operation: str | None = None
    operation_parameters: dict[str, Any] | None = None
    read_version: int | None = None
    isolation_level: str | None = None
    is_blind_append: bool | None = None
    operation_metrics: dict[str, str] | None = None
    engine_info: str | None = None
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    user_metadata: str | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    version: int
    tags: dict[str, str] | None = None
    extra: JsonDict | None = None


@dataclass(frozen=True, slots=True)
class Sidecar:
    path: str
    size_in_bytes: int
    modification_time: int
    tags: dict[str, str] | None = None
    extra: JsonDict | None = None


Action = Union[
    Protocol,
    Metadata,
    AddFile,
    RemoveFile,
    AddCDCFile,
    SetTransaction,
    DomainMetadata,
    CommitInfo,
    CheckpointMetadata,
    Sidecar,
]
FileAction = Union[AddFile, RemoveFile]
