"""The metrics codec: field names map to Delta's operationMetrics names, unknown counters
are left out, and Result.metrics keeps its snake_case names."""

from __future__ import annotations

from dataclasses import fields

from txsql.planner.metrics import (
    CloneMetrics,
    DeleteMetrics,
    MergeMetrics,
    OptimizeMetrics,
    RestoreMetrics,
    TruncateMetrics,
    UpdateMetrics,
    VacuumEndMetrics,
    VacuumStartMetrics,
    WriteMetrics,
)

# Delta's names, as Delta Spark writes them (DeltaOperationMetrics), typed out here so
# the codec is checked against the protocol's spelling, not against itself.
DELTA_NAMES = {
    WriteMetrics: {
        "numFiles", "numOutputBytes", "numOutputRows", "numRemovedFiles", "numRemovedBytes",
        "numDeletedRows", "numCopiedRows", "numAddedChangeFiles",
    },
    DeleteMetrics: {
        "numRemovedFiles", "numAddedFiles", "numAddedChangeFiles",
        "numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated",
        "numDeletedRows", "numCopiedRows", "numRemovedBytes", "numAddedBytes",
        "executionTimeMs", "scanTimeMs", "rewriteTimeMs",
    },
    UpdateMetrics: {
        "numRemovedFiles", "numAddedFiles", "numAddedChangeFiles",
        "numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated",
        "numUpdatedRows", "numCopiedRows", "numAddedBytes", "numRemovedBytes",
        "executionTimeMs", "scanTimeMs", "rewriteTimeMs",
    },
    MergeMetrics: {
        "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated",
        "numTargetRowsMatchedUpdated", "numTargetRowsNotMatchedBySourceUpdated",
        "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
        "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numOutputRows",
        "numTargetFilesAdded", "numTargetFilesRemoved", "numTargetBytesAdded",
        "numTargetBytesRemoved", "numTargetChangeFilesAdded", "numTargetDeletionVectorsAdded",
        "numTargetDeletionVectorsRemoved", "numTargetDeletionVectorsUpdated", "executionTimeMs",
        "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs",
    },
    TruncateMetrics: {"numRemovedFiles", "executionTimeMs"},
    RestoreMetrics: {
        "tableSizeAfterRestore", "numOfFilesAfterRestore", "numRemovedFiles",
        "numRestoredFiles", "removedFilesSize", "restoredFilesSize",
    },
    CloneMetrics: {
        "sourceTableSize", "sourceNumOfFiles", "numRemovedFiles", "numCopiedFiles",
        "removedFilesSize", "copiedFilesSize",
    },
    OptimizeMetrics: {
        "numRemovedFiles", "numRemovedBytes", "numAddedFiles", "numAddedBytes", "minFileSize",
        "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize", "numDeletionVectorsRemoved",
    },
    VacuumStartMetrics: {"numFilesToDelete", "sizeOfDataToDelete"},
    VacuumEndMetrics: {"numDeletedFiles", "numVacuumedDirectories"},
}  # fmt: skip


def _filled(cls: type) -> object:
    return cls(**{f.name: 7 for f in fields(cls)})


def test_every_family_writes_deltas_names() -> None:
    for cls, names in DELTA_NAMES.items():
        assert set(_filled(cls).delta()) == names, cls.__name__  # type: ignore[attr-defined]


def test_unknown_counters_are_left_out_and_values_kept() -> None:
    write = WriteMetrics(num_files=2, num_output_bytes=300, num_output_rows=10)
    assert write.delta() == {"numFiles": 2, "numOutputBytes": 300, "numOutputRows": 10}


def test_result_metrics_keep_their_snake_case_names() -> None:
    write = WriteMetrics(1, 10, 5, num_inserted_rows=4)  # 1 copied row (REPLACE WHERE)
    assert write.shown() == {"num_affected_rows": 4, "num_inserted_rows": 4}
    delete = DeleteMetrics(**{f.name: 3 for f in fields(DeleteMetrics)})
    assert delete.shown() == {"num_affected_rows": 3, "num_deleted_rows": 3, "spark_jobs": 3}
    assert "affectedRows" not in delete.delta() and "sparkJobs" not in delete.delta()
    update = UpdateMetrics(**{f.name: 2 for f in fields(UpdateMetrics)})
    assert update.shown() == {"num_affected_rows": 2, "num_updated_rows": 2, "spark_jobs": 2}
    assert TruncateMetrics(4, 9).shown() == {"num_removed_files": 4}
    merge = MergeMetrics(**{f.name: 1 for f in fields(MergeMetrics)})
    assert merge.shown() == {
        "num_affected_rows": 3,  # updated + deleted + inserted
        "num_updated_rows": 1,
        "num_deleted_rows": 1,
        "num_inserted_rows": 1,
        "spark_jobs": 1,
    }


def test_optimize_percentiles_of_the_new_files() -> None:
    class Sized:
        def __init__(self, size: int) -> None:
            self.size = size

    added = [Sized(s) for s in (40, 10, 30, 20)]
    metrics = OptimizeMetrics.of([Sized(5)], added, dvs=1)  # type: ignore[arg-type, list-item]
    assert (metrics.min_file_size, metrics.p50_file_size, metrics.max_file_size) == (10, 30, 40)
    assert (metrics.num_added_bytes, metrics.num_removed_files) == (100, 1)
