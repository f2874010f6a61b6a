"""Change data feed for DELETE, UPDATE and MERGE: the change rows of one statement.

Only tables with ``delta.enableChangeDataFeed = true`` come here (callers check
:func:`~txsql.engine.changes.cdf_enabled` first), so other tables keep their Spark jobs.
The rows that went are read back from their files at the positions the statement just
marked deleted (``DeletionOutcome.matched_rows_by_file``), which works the same with
deletion vectors and with copy-on-write. Rows that arrived are read from the statement's
new files, or, for MERGE, from its persisted classified rows. On a table tracking rows
each change row carries its stable id and commit version in the materialized columns
(:mod:`txsql.engine.change_ids`): the rows that went with their committed ids, the new
files' rows with the ids they store (an updated row's, NULL for a row yet to get one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING

from pyroaring import BitMap64

from txsql.engine.change_ids import scan_rows
from txsql.engine.changes import (
    DELETE,
    POSTIMAGE,
    PREIMAGE,
    ChangeFiles,
    cdf_enabled,
    rows_in_bitmaps,
    version_changes,
    with_change_type,
    write_change_files,
)
from txsql.log.actions import AddCDCFile, AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.dml.dv_writes import DeletionOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.planner.context import RunContext
    from txsql.txn.transaction import Transaction


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
    rows = rows_in_bitmaps(ctx.spark, snapshot, marked, lineage=True)
    return with_change_type(rows, change_type)


def file_rows(
    ctx: RunContext, snapshot: Snapshot, files: Sequence[AddFile], change_type: str
) -> DataFrame | None:
    """All live rows of ``files`` (their DVs applied), typed ``change_type``."""
    if not files:
        return None
    rows = scan_rows(ctx.spark, replace(snapshot, files=tuple(files)), lineage=True)
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


# --- statements inside BEGIN ... COMMIT --------------------------------------------------
#
# All statements of an explicit transaction land in ONE commit, and a commit with any
# change file is read from its change files alone. So once a CDF table is written inside
# BEGIN, every statement's changes go to change files: UPDATE and MERGE write their own;
# for the others (INSERT, DELETE with DVs, overwrites) the change rows are derived from
# what the statement did to the staged file set, exactly as a reader derives a commit.


@dataclass(frozen=True)
class StatementStart:
    """The staged state when a statement of an explicit transaction began."""

    files: tuple[AddFile, ...]
    change_files: int


def statement_start(txn: Transaction) -> StatementStart | None:
    """What :func:`record_statement_changes` compares with (None: no feed to keep)."""
    snapshot = txn.current_snapshot()
    if snapshot is None or not cdf_enabled(snapshot):
        return None
    return StatementStart(snapshot.files, _change_files(txn))


def record_statement_changes(
    ctx: RunContext, txn: Transaction, start: StatementStart | None
) -> None:
    """Stage change files for a statement that staged data changes without them."""
    after = txn.current_snapshot()
    if start is None or after is None or not cdf_enabled(after):
        return
    if _change_files(txn) > start.change_files:
        return  # the statement wrote its own (UPDATE, MERGE, copy-on-write DELETE)
    before = {f.key: f for f in start.files}
    now = {f.key: f for f in after.files}
    adds = [f for key, f in now.items() if key not in before]
    if adds and not any(f.data_change for f in adds):
        return  # a rearrangement (OPTIMIZE): no row changed
    removes = [f.to_remove() for key, f in before.items() if key not in now]
    actions = [*removes, *adds]
    rows = version_changes(ctx.spark, after, actions, lineage=True) if actions else None
    if rows is not None:
        txn.stage(write_change_files(ctx.spark, after, rows).actions)


def _change_files(txn: Transaction) -> int:
    return sum(isinstance(a, AddCDCFile) for a in txn.staged)
