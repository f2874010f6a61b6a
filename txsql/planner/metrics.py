"""What a statement counted, typed: one frozen dataclass per operation family.

Every field is one of Delta's commitInfo ``operationMetrics``, named by its field name in
camelCase (:func:`delta_name`, the one codec); ``None`` means Delta leaves the counter out
(a metadata-only DELETE reports no copied rows). Fields marked ``shown_only`` are not
Delta's: they appear only in ``Result.metrics``, whose snake_case names
(``num_affected_rows``...) each family's :meth:`~OperationMetrics.shown` picks, as
Databricks' SQL results do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from txsql.log.actions import AddFile
from txsql.txn.rowlevel.state import total_records

_SHOWN_ONLY: dict[str, Any] = {"shown_only": True}


def elapsed_ms(since: float) -> int:
    """Milliseconds since ``since`` (a ``time.perf_counter()`` reading)."""
    return int((time.perf_counter() - since) * 1000)


def delta_name(name: str) -> str:
    """A field's name in Delta's ``operationMetrics``.

    >>> delta_name("num_deletion_vectors_added")
    'numDeletionVectorsAdded'
    """
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


@dataclass(frozen=True)
class OperationMetrics:
    """The codec every family shares."""

    def delta(self) -> dict[str, int]:
        """Delta's ``operationMetrics`` (the commit writes the values as strings)."""
        return {
            delta_name(f.name): value
            for f in fields(self)
            if not f.metadata.get("shown_only") and (value := getattr(self, f.name)) is not None
        }

    def shown(self) -> dict[str, int]:
        """``Result.metrics``: by default the same counters as Delta's."""
        return self.delta()


@dataclass(frozen=True)
class WriteMetrics(OperationMetrics):
    """INSERT, INSERT OVERWRITE and REPLACE WHERE (Delta's ``WRITE``)."""

    num_files: int
    num_output_bytes: int
    num_output_rows: int
    num_removed_files: int | None = None
    num_removed_bytes: int | None = None
    num_deleted_rows: int | None = None
    num_copied_rows: int | None = None
    num_added_change_files: int | None = None
    num_inserted_rows: int = field(default=0, metadata=_SHOWN_ONLY)  # rows of the query

    @staticmethod
    def of(written: Sequence[AddFile], inserted: int | None = None) -> WriteMetrics:
        """The counters of ``written``; ``inserted`` rows of them came from the query (all,
        unless REPLACE WHERE also wrote copies of kept rows)."""
        rows = total_records(written) or 0
        return WriteMetrics(
            len(written),
            sum(a.size for a in written),
            rows,
            num_inserted_rows=rows if inserted is None else inserted,
        )

    def shown(self) -> dict[str, int]:
        rows = self.num_inserted_rows
        return {"num_affected_rows": rows, "num_inserted_rows": rows}


@dataclass(frozen=True)
class RowRewriteMetrics(OperationMetrics):
    """What DELETE and UPDATE share: files, deletion vectors and bytes, added and removed."""

    num_removed_files: int
    num_added_files: int | None  # None: a metadata-only DELETE
    num_added_change_files: int
    num_deletion_vectors_added: int
    num_deletion_vectors_removed: int
    num_deletion_vectors_updated: int
    num_copied_rows: int | None  # None: a metadata-only DELETE
    num_removed_bytes: int
    num_added_bytes: int
    execution_time_ms: int
    scan_time_ms: int
    rewrite_time_ms: int
    spark_jobs: int = field(metadata=_SHOWN_ONLY)


@dataclass(frozen=True)
class DeleteMetrics(RowRewriteMetrics):
    num_deleted_rows: int | None  # None: a removed file had no row count in its stats
    affected_rows: int = field(metadata=_SHOWN_ONLY)  # -1: not known

    def shown(self) -> dict[str, int]:
        return {
            "num_affected_rows": self.affected_rows,
            "num_deleted_rows": self.affected_rows,
            "spark_jobs": self.spark_jobs,
        }


@dataclass(frozen=True)
class UpdateMetrics(RowRewriteMetrics):
    num_updated_rows: int

    def shown(self) -> dict[str, int]:
        return {
            "num_affected_rows": self.num_updated_rows,
            "num_updated_rows": self.num_updated_rows,
            "spark_jobs": self.spark_jobs,
        }


@dataclass(frozen=True)
class MergeMetrics(OperationMetrics):
    """Delta's MERGE counters (``DeltaOperationMetrics.MERGE``)."""

    num_source_rows: int
    num_target_rows_inserted: int
    num_target_rows_updated: int
    num_target_rows_matched_updated: int
    num_target_rows_not_matched_by_source_updated: int
    num_target_rows_deleted: int
    num_target_rows_matched_deleted: int
    num_target_rows_not_matched_by_source_deleted: int
    num_target_rows_copied: int
    num_output_rows: int
    num_target_files_added: int
    num_target_files_removed: int
    num_target_bytes_added: int
    num_target_bytes_removed: int
    num_target_change_files_added: int
    num_target_deletion_vectors_added: int
    num_target_deletion_vectors_removed: int
    num_target_deletion_vectors_updated: int
    execution_time_ms: int
    scan_time_ms: int
    rewrite_time_ms: int
    materialize_source_time_ms: int = 0  # the source is persisted, not materialized apart
    spark_jobs: int = field(default=0, metadata=_SHOWN_ONLY)

    def shown(self) -> dict[str, int]:
        """Databricks' MERGE result columns."""
        updated, deleted = self.num_target_rows_updated, self.num_target_rows_deleted
        inserted = self.num_target_rows_inserted
        return {
            "num_affected_rows": updated + deleted + inserted,
            "num_updated_rows": updated,
            "num_deleted_rows": deleted,
            "num_inserted_rows": inserted,
            "spark_jobs": self.spark_jobs,
        }


@dataclass(frozen=True)
class TruncateMetrics(OperationMetrics):
    num_removed_files: int
    execution_time_ms: int

    def shown(self) -> dict[str, int]:
        return {"num_removed_files": self.num_removed_files}


@dataclass(frozen=True)
class RestoreMetrics(OperationMetrics):
    table_size_after_restore: int
    num_of_files_after_restore: int
    num_removed_files: int
    num_restored_files: int
    removed_files_size: int
    restored_files_size: int


@dataclass(frozen=True)
class CloneMetrics(OperationMetrics):
    source_table_size: int
    source_num_of_files: int
    num_removed_files: int
    num_copied_files: int
    removed_files_size: int
    copied_files_size: int


@dataclass(frozen=True)
class OptimizeMetrics(OperationMetrics):
    """OPTIMIZE's commit (its result rows are Delta's ``metrics`` struct, built apart)."""

    num_removed_files: int
    num_removed_bytes: int
    num_added_files: int
    num_added_bytes: int
    min_file_size: int
    p25_file_size: int
    p50_file_size: int
    p75_file_size: int
    max_file_size: int
    num_deletion_vectors_removed: int

    @staticmethod
    def of(removed: Sequence[AddFile], added: Sequence[AddFile], dvs: int) -> OptimizeMetrics:
        sizes = sorted(a.size for a in added)

        def percentile(q: float) -> int:
            return sizes[min(len(sizes) - 1, int(q * len(sizes)))] if sizes else 0

        return OptimizeMetrics(
            len(removed),
            sum(f.size for f in removed),
            len(added),
            sum(a.size for a in added),
            percentile(0.0),
            percentile(0.25),
            percentile(0.5),
            percentile(0.75),
            sizes[-1] if sizes else 0,
            dvs,
        )


@dataclass(frozen=True)
class VacuumStartMetrics(OperationMetrics):
    num_files_to_delete: int
    size_of_data_to_delete: int


@dataclass(frozen=True)
class VacuumEndMetrics(OperationMetrics):
    num_deleted_files: int
    num_vacuumed_directories: int
    size_of_deleted_data: int = field(default=0, metadata=_SHOWN_ONLY)

    def shown(self) -> dict[str, int]:
        return {
            "numDeletedFiles": self.num_deleted_files,
            "sizeOfDeletedData": self.size_of_deleted_data,
            "numVacuumedDirectories": self.num_vacuumed_directories,
        }
