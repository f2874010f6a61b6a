"""Check one winning commit against our transaction, in Delta Spark's order.

Order (Delta Spark's ``ConflictChecker``; ARCHITECTURE.md, "Conflict checks"): protocol ->
metadata -> domain metadata -> app ids -> files added that we should have read -> files
deleted that we read -> files both deleted. Steps 1-4 live in :mod:`txsql.txn.conflicts.table_state`.
Steps 5-7 come in two modes:

* file level (``txsql.rowLevelConcurrency=false``, the default without DVs): exactly Delta
  Spark — partition predicates against the winner's partition values, paths against paths;
* row level (default on DV tables): predicates against partition values *and* stats, the
  winner's new rows through an optional ``row_checker`` hook, and DV updates row by row
  (:mod:`txsql.txn.rowlevel.state`). Anything undecidable falls back to the file-level rule.

This module is the driver (the order, and the compaction-vs-DML translation); step 5 is
:mod:`txsql.txn.conflicts.added_files`, steps 6-7 :mod:`txsql.txn.conflicts.deleted_files`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from txsql.log.predicates import Predicate
from txsql.log.schema import StructType
from txsql.txn.conflicts.added_files import check_added_files, check_join_adds
from txsql.txn.conflicts.deleted_files import (
    check_deleted_files,
    check_row_level_deletes,
    row_level_dv_updates,
)
from txsql.txn.conflicts.report import Reporter
from txsql.txn.conflicts.revived_rows import check_readds_without_remove, check_revived_rows
from txsql.txn.conflicts.table_state import (
    check_app_ids,
    check_domains,
    check_metadata,
    check_protocol,
)
from txsql.txn.isolation import IsolationLevel, changes_no_data
from txsql.txn.join_read import JoinChecker
from txsql.txn.readset import ReadSet, norm_path
from txsql.txn.rowlevel.compaction_races import (
    Carry,
    DmlTranslation,
    can_write_dvs,
    plan_carry,
    plan_dml_translation,
    winner_row_map,
)
from txsql.txn.rowlevel.row_map import RowMap
from txsql.txn.rowlevel.state import Rebase, RowLevelState
from txsql.txn.winner import WinningCommit

__all__ = [
    "CheckOutcome",
    "IsolationLevel",
    "ReadSet",
    "RowPredicateChecker",
    "TxnView",
    "WinningCommit",
    "check_winning_commit",
]

RowPredicateChecker = Callable[[Predicate, Sequence[AddFile]], bool]
"""Hook: does any live row of these files satisfy the predicate? (Spark evaluates it.)

The hook object may also implement :class:`txsql.txn.hooks.RowSetChecker` (ask about
specific rows, e.g. rows a winner revived) and ``RowValueReader`` (values for messages).
"""


@dataclass
class TxnView:
    """Our transaction as the checker sees it (protocol/metadata advance as winners pass).

    Attributes:
        actions: Our staged actions (no commitInfo).
        read_set: What we read.
        isolation: The level we are checked under.
        blind_append: Our own isBlindAppend.
        schema: The table schema as of our read (predicates are typed with it).
        partition_columns: Partition columns as of our read.
        protocol: The protocol we commit against.
        metadata: The metadata we commit against.
        rows: Row-level state; None means file-level (Delta Spark) rules.
        row_checker: Optional hook deciding whether added rows satisfy a read predicate.
        column_mapping_mode: Stats and partition values are keyed by physical names.
        join_checker: Optional hook deciding whether rows join with a MERGE's source
            (:mod:`txsql.txn.join_read`); without it, join reads conflict like ``TRUE``.
    """

    actions: Sequence[Action]
    read_set: ReadSet
    isolation: IsolationLevel
    blind_append: bool
    schema: StructType
    partition_columns: tuple[str, ...]
    protocol: Protocol
    metadata: Metadata
    rows: RowLevelState | None = None
    row_checker: RowPredicateChecker | None = None
    column_mapping_mode: str = "none"
    row_map: RowMap | None = None  # set when we are a txsql compaction with a row map
    join_checker: JoinChecker | None = None

    @property
    def metadata_changed(self) -> bool:
        return any(isinstance(a, Metadata) for a in self.actions)

    @property
    def removed_paths(self) -> set[str]:
        return {norm_path(a.path) for a in self.actions if isinstance(a, RemoveFile)}


@dataclass
class CheckOutcome:
    """No conflict: the protocol/metadata to adopt and the DV rebases to apply."""

    protocol: Protocol
    metadata: Metadata
    rebases: list[Rebase] = field(default_factory=list)
    translation: DmlTranslation | None = None  # we move our DML onto a compaction's outputs
    carry: Carry | None = None  # our compaction takes the winner's deletions along


def check_winning_commit(winner: WinningCommit, ours: TxnView) -> CheckOutcome:
    """Raise the first conflict ``winner`` causes us, else say how to rebase onto it.

    Raises:
        ProtocolChangedError, MetadataChangedError, ConcurrentTransactionError,
        ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentDeleteDeleteError.
    """
    report = Reporter(winner, ours.isolation)
    protocol = check_protocol(winner, ours.actions, ours.protocol, ours.metadata, report)
    metadata = check_metadata(winner, ours.actions, ours.metadata, protocol, report)
    check_domains(winner, ours.actions, report)
    check_app_ids(winner, ours.read_set.app_ids, report)
    translation, carry, handled = _compaction_race(winner, ours)
    row_level_paths = row_level_dv_updates(winner, ours) - handled
    check_added_files(winner, ours, row_level_paths | handled, report)
    check_join_adds(winner, ours, row_level_paths | handled, report)
    check_revived_rows(winner, ours, row_level_paths, report)
    check_readds_without_remove(winner, ours, report)
    rebases = check_row_level_deletes(winner, ours, row_level_paths, report)
    check_deleted_files(winner, ours, row_level_paths | handled, report)
    return CheckOutcome(protocol, metadata, rebases, translation, carry)


def _compaction_race(
    winner: WinningCommit, ours: TxnView
) -> tuple[DmlTranslation | None, Carry | None, set[str]]:
    """Compaction vs DML (row level only): the winner's paths handled by row-map translation.

    Returns the translation of our DML onto a winning compaction, or the winner's deletions
    our compaction carries, and the winner's paths they take care of (skipped by the
    file-level steps 6-7). Untranslatable cases return nothing and the usual rules apply.
    """
    state = ours.rows
    if state is None or not can_write_dvs(ours.protocol, ours.metadata):
        return None, None, set()
    if ours.row_map is not None:
        carry = plan_carry(winner, ours.row_map, state, _staged_removes(ours))
        if carry is None:
            return None, None, set()
        return None, carry, set(carry.sources)
    if winner_row_map(winner) is None or changes_no_data(
        [a for a in ours.actions if isinstance(a, (AddFile, RemoveFile))]
    ):
        return None, None, set()  # (two compactions of the same files still conflict)
    translation = plan_dml_translation(winner, state, ours.read_set)
    if translation is None:
        return None, None, set()
    return translation, None, set(winner.removes)


def _staged_removes(ours: TxnView) -> dict[str, RemoveFile]:
    return {norm_path(a.path): a for a in ours.actions if isinstance(a, RemoveFile)}
