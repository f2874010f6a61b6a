"""What every step of the checker sees: our transaction (:class:`TxnView`) and one winner
being checked against it (:class:`Check`, which the steps fill in as they pass).

A view is built once per commit (or read validation) by :func:`build_view` and advances as
winners pass: the protocol and metadata we commit against become the winner's when a step
adopts them, and the row-level state moves its base past each winner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from txsql.log import properties
from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from txsql.log.schema import StructType, parse_schema
from txsql.log.snapshot import Snapshot
from txsql.storage.filesystem import FileIO
from txsql.txn.conflicts.report import Reporter
from txsql.txn.hooks import JoinChecker, RowPredicateChecker
from txsql.txn.isolation import IsolationLevel, row_level_enabled
from txsql.txn.readset import ReadSet, norm_path
from txsql.txn.rowlevel.rebase import Carry, DmlTranslation, Rebase
from txsql.txn.rowlevel.row_map import RowMap
from txsql.txn.rowlevel.state import RowLevelState
from txsql.txn.winner import WinningCommit


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
        row_map: Set when we are a txsql compaction with a row map.
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
    row_map: RowMap | None = None
    join_checker: JoinChecker | None = None

    @property
    def metadata_changed(self) -> bool:
        return any(isinstance(a, Metadata) for a in self.actions)

    @property
    def removed_paths(self) -> set[str]:
        return {norm_path(a.path) for a in self.actions if isinstance(a, RemoveFile)}

    def staged_removes(self) -> dict[str, RemoveFile]:
        return {norm_path(a.path): a for a in self.actions if isinstance(a, RemoveFile)}


def build_view(
    table_root: str,
    fs: FileIO,
    snapshot: Snapshot | None,
    *,
    actions: Sequence[Action],
    read_set: ReadSet,
    isolation: IsolationLevel,
    blind_append: bool,
    protocol: Protocol,
    metadata: Metadata,
    row_checker: RowPredicateChecker | None,
    join_checker: JoinChecker | None = None,
    row_map: RowMap | None = None,
) -> TxnView:
    """The view of a transaction that read ``snapshot`` (None: it creates the table) and
    stages ``actions``; row level when the table has ``txsql.rowLevelConcurrency`` on."""
    shape = snapshot.metadata if snapshot else metadata
    conf = snapshot.configuration if snapshot else metadata.configuration
    rows = None
    if snapshot is not None and row_level_enabled(conf):
        rows = RowLevelState(
            table_root,
            fs,
            {norm_path(f.path): f for f in snapshot.files},
            _by_path(actions, RemoveFile),
            _by_path(actions, AddFile),
        )
    return TxnView(
        actions=actions,
        read_set=read_set,
        isolation=isolation,
        blind_append=blind_append,
        schema=parse_schema(shape.schema_string),
        partition_columns=shape.partition_columns,
        protocol=protocol,
        metadata=metadata,
        rows=rows,
        row_checker=row_checker,
        join_checker=join_checker,
        column_mapping_mode=properties.column_mapping_mode(conf),
        row_map=row_map,
    )


def _by_path(actions: Sequence[Action], kind: type[AddFile] | type[RemoveFile]) -> dict:
    return {norm_path(a.path): a for a in actions if isinstance(a, kind)}


@dataclass
class CheckOutcome:
    """No conflict: the protocol/metadata to adopt and how to rebase onto the winner."""

    protocol: Protocol
    metadata: Metadata
    rebases: list[Rebase] = field(default_factory=list)
    translation: DmlTranslation | None = None  # we move our DML onto a compaction's outputs
    carry: Carry | None = None  # our compaction takes the winner's deletions along


@dataclass
class Check:
    """One winner being checked against ``ours``: what the steps so far decided.

    ``handled``: the winner's paths the compaction race translated (the file-level steps
    skip them).
    """

    winner: WinningCommit
    ours: TxnView
    report: Reporter
    outcome: CheckOutcome
    handled: set[str] = field(default_factory=set)

    @classmethod
    def start(cls, winner: WinningCommit, ours: TxnView) -> Check:
        outcome = CheckOutcome(ours.protocol, ours.metadata)
        return cls(winner, ours, Reporter(winner, ours.isolation), outcome)

    @cached_property
    def decidable(self) -> set[str]:
        """The winner's DV updates we can judge row by row (none at file level)."""
        return row_level_dv_updates(self.winner, self.ours)

    @property
    def row_level(self) -> set[str]:
        """The DV updates steps 5b-7 judge row by row: decidable, not translated."""
        return self.decidable - self.handled

    @property
    def skipped(self) -> set[str]:
        """Paths the file-level steps leave alone: judged row by row, or translated."""
        return self.row_level | self.handled


def row_level_dv_updates(winner: WinningCommit, ours: TxnView) -> set[str]:
    """The winner's DV updates that we can judge row by row (none in file-level mode)."""
    state = ours.rows
    if state is None:
        return set()
    return {
        path
        for path, (remove, _) in winner.dv_updates.items()
        if state.decidable(ours.read_set, path, remove)
    }


def file_actions(winner: WinningCommit) -> list[Action]:
    return [a for a in winner.actions if isinstance(a, (AddFile, RemoveFile))]
