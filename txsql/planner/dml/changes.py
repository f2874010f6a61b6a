"""Change data feed for DELETE, UPDATE and MERGE: the change rows of one statement.

Only tables with ``delta.enableChangeDataFeed = true`` come here (callers check
:func:`~txsql.engine.changes.cdf_enabled` first), so other tables keep their Spark jobs.
The rows that went are read back from their files at the positions the statement just
marked deleted (``DeletionOutcome.matched_rows_by_file``), which works the same with
deletion vectors and with copy-on-write. Rows that arrived are read from the statement's
new files, or, for MERGE, from its persisted classified rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING

from pyroaring import BitMap64

from txsql.engine.changes import (
    DELETE,
    POSTIMAGE,
    PREIMAGE,
    ChangeFiles,
    rows_in_bitmaps,
    with_change_type,
    write_change_files,
)
from txsql.engine.scan import scan_snapshot
from txsql.log.actions import AddCDCFile, AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.dml.dv_writes import DeletionOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.planner.context import RunContext


@dataclass
class StatementChanges:
    """The change files one statement wrote (none until :meth:`write` ran)."""

    files: ChangeFiles = field(default_factory=lambda: ChangeFiles([], []))

    @property
    def actions(self) -> list[AddCDCFile]:
        return list(self.files.actions)

    @property
    def count(self) -> int:
        return len(self.files.actions)

    def write(self, ctx: RunContext, snapshot: Snapshot, parts: Sequence[DataFrame]) -> None:
        if parts:
            rows = reduce(lambda a, b: a.unionByName(b), parts)
            self.files = write_change_files(ctx.spark, snapshot, rows)

    def cleanup(self) -> None:
        self.files.cleanup()


def removed_rows(
    ctx: RunContext, snapshot: Snapshot, outcome: DeletionOutcome, change_type: str
) -> DataFrame | None:
    """The rows ``outcome`` newly deleted, typed ``change_type`` (None: no rows)."""
    marked: dict[str, tuple[AddFile, BitMap64]] = {
        f.path: (f, outcome.matched_rows_by_file[f.path])
        for f in outcome.touched_files
        if f.path in outcome.matched_rows_by_file
    }
    if not marked:
        return None
    return with_change_type(rows_in_bitmaps(ctx.spark, snapshot, marked), change_type)


def file_rows(
    ctx: RunContext, snapshot: Snapshot, files: Sequence[AddFile], change_type: str
) -> DataFrame | None:
    """All live rows of ``files`` (their DVs applied), typed ``change_type``."""
    if not files:
        return None
    rows = scan_snapshot(ctx.spark, replace(snapshot, files=tuple(files)))
    return with_change_type(rows, change_type)


def delete_changes(
    ctx: RunContext, snapshot: Snapshot, outcome: DeletionOutcome, whole: Sequence[AddFile]
) -> StatementChanges:
    """DELETE: change files only when files were rewritten (copy-on-write).

    With deletion vectors every change is derivable from the log (a removed file, or the
    same path re-added with a larger DV), and Delta Spark then writes no change files
    either. A rewritten file is a new path, so its deleted rows must be written out, and
    then every deleted row of the commit (whole removed files too) goes to the feed.
    """
    changes = StatementChanges()
    if outcome.num_added_files == 0:
        return changes
    parts = [
        p
        for p in (
            removed_rows(ctx, snapshot, outcome, DELETE),
            file_rows(ctx, snapshot, whole, DELETE),
        )
        if p is not None
    ]
    changes.write(ctx, snapshot, parts)
    return changes


def update_changes(
    ctx: RunContext, snapshot: Snapshot, outcome: DeletionOutcome, new_files: Sequence[AddFile]
) -> StatementChanges:
    """UPDATE: the old rows as ``update_preimage``, the new files' rows as postimages."""
    changes = StatementChanges()
    parts = [
        p
        for p in (
            removed_rows(ctx, snapshot, outcome, PREIMAGE),
            file_rows(ctx, snapshot, new_files, POSTIMAGE),
        )
        if p is not None
    ]
    changes.write(ctx, snapshot, parts)
    return changes
