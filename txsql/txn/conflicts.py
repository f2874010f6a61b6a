"""Check one winning commit against our transaction, in Delta Spark's order.

Order (reference/delta-protocol.md §5.4): protocol -> metadata -> domain metadata -> app
ids -> files added that we should have read -> files deleted that we read -> files both
deleted. Steps 1-4 live in :mod:`txsql.txn.table_rules`. Steps 5-7 come in two modes:

* file level (``txsql.rowLevelConcurrency=false``, the default without DVs): exactly Delta
  Spark — partition predicates against the winner's partition values, paths against paths;
* row level (default on DV tables): predicates against partition values *and* stats, the
  winner's new rows through an optional ``row_checker`` hook, and DV updates row by row
  (:mod:`txsql.txn.rowlevel`). Anything undecidable falls back to the file-level rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from pyroaring import BitMap64

from txsql.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
)
from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from txsql.log.predicate_eval import eval_partition, may_match_file
from txsql.log.predicates import (
    TRUE,
    Predicate,
    split_predicate,
)
from txsql.log.schema import StructType
from txsql.txn.compaction import (
    Carry,
    DmlTranslation,
    can_write_dvs,
    plan_carry,
    plan_dml_translation,
    winner_row_map,
)
from txsql.txn.explain import Reporter, partition_labels, partition_predicate_example
from txsql.txn.isolation import IsolationLevel, changes_no_data
from txsql.txn.joinread import JoinChecker, harmless_removes
from txsql.txn.readset import ReadSet, ScanRecord, norm_path
from txsql.txn.row_conflicts import (
    check_readds_without_remove,
    check_revived_rows,
    files_of,
    row_details,
    same_row_hint,
    same_rows,
)
from txsql.txn.rowlevel import Rebase, RowLevelState
from txsql.txn.rowmap import RowMap
from txsql.txn.table_rules import check_app_ids, check_domains, check_metadata, check_protocol
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

The hook object may also implement :class:`txsql.txn.row_hooks.RowSetChecker` (ask about
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
            (:mod:`txsql.txn.joinread`); without it, join reads conflict like ``TRUE``.
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
    row_level_paths = _row_level_dv_updates(winner, ours) - handled
    _check_added_files(winner, ours, row_level_paths | handled, report)
    _check_join_adds(winner, ours, row_level_paths | handled, report)
    check_revived_rows(winner, ours, row_level_paths, report)
    check_readds_without_remove(winner, ours, report)
    rebases = _check_row_level_deletes(winner, ours, row_level_paths, report)
    _check_deleted_files(winner, ours, row_level_paths | handled, report)
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


def _row_level_dv_updates(winner: WinningCommit, ours: TxnView) -> set[str]:
    """The winner's DV updates that we can judge row by row (none in file-level mode)."""
    state = ours.rows
    if state is None:
        return set()
    return {
        path
        for path, (remove, _) in winner.dv_updates.items()
        if state.decidable(ours.read_set, path, remove)
    }


# --- step 5: added files we should have read ---------------------------------------------


def _candidate_adds(winner: WinningCommit, ours: TxnView, skip: set[str]) -> list[AddFile]:
    if ours.isolation is IsolationLevel.SNAPSHOT_ISOLATION or ours.blind_append:
        return []
    if (
        ours.isolation is IsolationLevel.WRITE_SERIALIZABLE
        and not ours.metadata_changed
        and winner.is_blind_append
    ):
        return []  # WriteSerializable may order a blind append after us
    adds = [a for p, a in winner.adds.items() if p not in skip]
    if ours.rows is not None and changes_no_data(_file_actions(winner)):
        # A pure rearrangement (OPTIMIZE) adds no new rows; its removes are checked below.
        return []
    return adds


def _file_actions(winner: WinningCommit) -> list[Action]:
    return [a for a in winner.actions if isinstance(a, (AddFile, RemoveFile))]


def _check_added_files(
    winner: WinningCommit, ours: TxnView, skip: set[str], report: Reporter
) -> None:
    adds = _candidate_adds(winner, ours, skip)
    if not adds:
        return
    read = ours.read_set
    if read.read_whole_table:
        _append_conflict(winner, ours, adds, TRUE, "we read the whole table", report)
    for scan in _distinct_scans(read.scans):
        hits = _matching_adds(scan, adds, ours)
        if not hits:
            continue
        checker = ours.row_checker if ours.rows is not None and scan.deterministic else None
        if checker is not None and not checker(scan.predicate, hits):
            continue  # the added rows were evaluated and none satisfies our predicate
        _append_conflict(winner, ours, hits, scan.predicate, _rule(ours, scan), report)


def _check_join_adds(
    winner: WinningCommit, ours: TxnView, skip: set[str], report: Reporter
) -> None:
    """Step 5 for MERGE join reads: conflict only if an added row joins with our source.

    Applies in file-level mode too: the hook's answer is exact, not a stats guess.
    """
    if not ours.read_set.joins:
        return
    adds = _candidate_adds(winner, ours, skip)
    for join in ours.read_set.joins if adds else ():
        hits = [
            a
            for a in adds
            if may_match_file(
                join.target_filter,
                a,
                ours.schema,
                ours.partition_columns,
                ours.column_mapping_mode,
            )
        ]
        if not hits:
            continue
        checker = ours.join_checker
        if checker is not None and not checker(join, hits):
            continue  # Spark joined the added rows with our source: none joins
        rule = (
            "rows were added that join with our MERGE source under ON"
            if checker is not None
            else "files were added that may join with our MERGE source (no join check)"
        )
        _append_conflict(winner, ours, hits, join.target_filter, rule, report)


def _distinct_scans(scans: Sequence[ScanRecord]) -> list[ScanRecord]:
    seen: dict[Predicate, ScanRecord] = {}
    for scan in scans:
        seen.setdefault(scan.predicate, scan)
    return list(seen.values())


def _matching_adds(scan: ScanRecord, adds: Sequence[AddFile], ours: TxnView) -> list[AddFile]:
    predicate = scan.predicate if scan.deterministic else TRUE
    if ours.rows is None:
        # Delta Spark: only the partition conjuncts count; data filters read everything.
        part, _, _ = split_predicate(predicate, ours.partition_columns)
        return [
            a
            for a in adds
            if eval_partition(
                part,
                a.partition_values,
                ours.schema,
                ours.partition_columns,
                ours.column_mapping_mode,
            )
            is not False
        ]
    return [
        a
        for a in adds
        if may_match_file(
            predicate, a, ours.schema, ours.partition_columns, ours.column_mapping_mode
        )
    ]


def _rule(ours: TxnView, scan: ScanRecord) -> str:
    if not scan.deterministic:
        return "files were added and our read predicate is non-deterministic (file level)"
    if ours.rows is None:
        if not ours.partition_columns:
            return "files were added to an unpartitioned table we read (file level)"
        return "files were added to a partition we read"
    if ours.row_checker is not None:
        return "rows were added that satisfy our read predicate"
    return "files were added whose partition values and stats may match our read predicate"


def _append_conflict(
    winner: WinningCommit,
    ours: TxnView,
    hits: Sequence[AddFile],
    predicate: Predicate,
    rule: str,
    report: Reporter,
) -> None:
    partitions = partition_labels(a.partition_values for a in hits)
    same = same_rows(winner, ours, _row_level_dv_updates(winner, ours))
    if same:
        # An UPDATE/MERGE of rows we also matched: its new row versions are the "added
        # data", but the truth to tell is the same-row write, which no predicate avoids.
        report.fail(
            ConcurrentAppendError,
            "a concurrent commit rewrote rows this transaction matched (and added their "
            "new versions, which this transaction should have read)",
            rule=f"{rule}; the winner also deleted rows we matched (same-row write, row level)",
            partitions=partitions,
            files=[a.path for a in hits],
            rows=same,
            row_details=row_details(ours, files_of(winner, ours, same), same),
            hint=same_row_hint(winner),
        )
    report.fail(
        ConcurrentAppendError,
        "a concurrent commit added data this transaction should have read",
        rule=rule,
        partitions=partitions,
        files=[a.path for a in hits],
        hint=_append_hint(winner, ours, hits, predicate),
    )


def _append_hint(
    winner: WinningCommit, ours: TxnView, hits: Sequence[AddFile], predicate: Predicate
) -> str:
    tips = []
    part, _, _ = split_predicate(predicate, ours.partition_columns)
    if ours.partition_columns and part == TRUE:
        example = partition_predicate_example(hits[0].partition_values)
        tips.append(
            f"add a partition predicate such as {example} so writers in other "
            "partitions do not conflict"
        )
    if winner.is_blind_append and ours.isolation is IsolationLevel.SERIALIZABLE:
        tips.append(
            "under WriteSerializable (delta.isolationLevel) blind INSERTs do not "
            "conflict with this statement"
        )
    if ours.rows is None and not ours.partition_columns:
        tips.append(
            "on an unpartitioned table every concurrent change conflicts at file "
            "level; enable deletion vectors / txsql.rowLevelConcurrency"
        )
    tips.append(f"retry: the statement will then see the data added by version {winner.version}")
    return _sentence(tips)


# --- steps 6-7: deleted files ---------------------------------------------------------------


def _check_row_level_deletes(
    winner: WinningCommit, ours: TxnView, paths: set[str], report: Reporter
) -> list[Rebase]:
    """Row-level steps 6 and 7 for the winner's decidable DV updates; return the rebases."""
    state = ours.rows
    if state is None or not paths:
        return []
    read_hits: dict[str, BitMap64] = {}
    write_hits: dict[str, BitMap64] = {}
    rebases = []
    for path in sorted(paths):
        _, add = winner.dv_updates[path]
        deleted = state.newly_deleted(path, add)
        matched = ours.read_set.rows.get(path)
        if matched is not None and matched & deleted:
            read_hits[path] = matched & deleted
        if state.modifies(path):
            mine = state.our_rows(path)
            assert mine is not None  # decidable() guarantees it
            if mine & deleted:
                write_hits[path] = mine & deleted
            rebases.append(Rebase(path, add, mine))
    files = {p: winner.dv_updates[p][1] for p in paths}
    if read_hits:
        report.fail(
            ConcurrentDeleteReadError,
            "a concurrent commit deleted or updated rows this transaction read",
            rule="rows we matched were deleted by the winner (row level)",
            partitions=_labels(winner, read_hits),
            files=list(read_hits),
            rows=read_hits,
            row_details=row_details(ours, files, read_hits),
            hint=same_row_hint(winner),
        )
    if write_hits:
        report.fail(
            ConcurrentDeleteDeleteError,
            "a concurrent commit deleted or updated rows this transaction also changes",
            rule="both transactions deleted the same rows (row level)",
            partitions=_labels(winner, write_hits),
            files=list(write_hits),
            rows=write_hits,
            row_details=row_details(ours, files, write_hits),
            hint=same_row_hint(winner),
        )
    return rebases


def _labels(winner: WinningCommit, paths: Iterable[str]) -> tuple[str, ...]:
    return partition_labels(winner.dv_updates[p][1].partition_values for p in paths)


def _check_deleted_files(
    winner: WinningCommit, ours: TxnView, row_level: set[str], report: Reporter
) -> None:
    removed = {p: r for p, r in winner.removes.items() if p not in row_level}
    if not removed:
        return
    read = ours.read_set
    # Files only a MERGE's join read, none of whose rows joined: removing them is harmless.
    harmless = harmless_removes(read, removed, ours.join_checker)
    read_and_removed = sorted(set(removed) & read.files - harmless)
    if read_and_removed or read.read_whole_table:
        hit = read_and_removed or sorted(removed)
        rule = (
            "a file we read was removed"
            if read_and_removed
            else "we read the whole table and the winner removed files"
        )
        # A rewrite that changes no data (a compaction) deleted no rows: not a same-row write.
        rewrite = changes_no_data(_file_actions(winner))
        same = {p: r for p, r in same_rows(winner, ours, row_level).items() if p in removed}
        if same and not rewrite:
            report.fail(
                ConcurrentDeleteReadError,
                "a concurrent commit deleted or updated rows this transaction read",
                rule=f"{rule}; it held rows we matched (same-row write, row level)",
                partitions=partition_labels(removed[p].partition_values for p in same),
                files=[removed[p].path for p in same],
                rows=same,
                row_details=row_details(ours, files_of(winner, ours, same), same),
                hint=same_row_hint(winner),
            )
        report.fail(
            ConcurrentDeleteReadError,
            "a concurrent commit removed data this transaction read",
            rule=rule,
            partitions=partition_labels(removed[p].partition_values for p in hit),
            files=[removed[p].path for p in hit],
            hint=_delete_hint(winner, ours, [removed[p] for p in hit]),
        )
    both = sorted(set(removed) & ours.removed_paths)
    if both:
        report.fail(
            ConcurrentDeleteDeleteError,
            "a concurrent commit removed a file this transaction also removes",
            rule="both transactions removed the same file",
            partitions=partition_labels(removed[p].partition_values for p in both),
            files=[removed[p].path for p in both],
            hint=_delete_hint(winner, ours, [removed[p] for p in both]),
        )


def _delete_hint(winner: WinningCommit, ours: TxnView, hit: Sequence[RemoveFile]) -> str:
    tips = []
    if ours.partition_columns and hit[0].partition_values:
        example = partition_predicate_example(hit[0].partition_values)
        tips.append(
            f"scope the statement to its partitions (e.g. {example}) so it reads fewer files"
        )
    if ours.rows is not None and changes_no_data(_file_actions(winner)):
        tips.append(
            f"{winner.describe} rewrote files without changing data and recorded no row "
            "map txsql can translate through (ZORDER, or another engine's compaction)"
        )
    if ours.rows is None and any(a.deletion_vector for _, a in winner.dv_updates.values()):
        tips.append(
            "with deletion vectors and txsql.rowLevelConcurrency, changes to "
            "different rows of one file do not conflict"
        )
    tips.append(f"retry: the statement will then read the table as of version {winner.version}")
    return _sentence(tips)


def _sentence(tips: Sequence[str]) -> str:
    text = "; ".join(tips)
    return text[:1].upper() + text[1:] + "."
