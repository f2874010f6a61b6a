"""Conflict step 5: files a winner added that our transaction should have read.

Split from :mod:`txsql.txn.conflicts.checker` (which keeps the order of the steps): this is the
rule itself in both modes. File level is Delta Spark's (only the partition conjuncts of our
read predicates count); row level also uses stats and the ``row_checker`` hook, and MERGE
join reads ask the ``join_checker`` hook whether an added row joins with the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from txsql.errors import ConcurrentAppendError
from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.log.predicate_eval import eval_partition
from txsql.log.predicates import TRUE, Predicate, split_predicate
from txsql.txn.conflicts.deleted_files import file_actions, row_level_dv_updates, sentence
from txsql.txn.conflicts.report import Reporter, partition_labels, partition_predicate_example
from txsql.txn.conflicts.revived_rows import fail_same_rows, same_rows
from txsql.txn.isolation import IsolationLevel, changes_no_data
from txsql.txn.readset import ScanRecord
from txsql.txn.winner import WinningCommit

if TYPE_CHECKING:
    from txsql.txn.conflicts.checker import TxnView


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
    if ours.rows is not None and changes_no_data(file_actions(winner)):
        # A pure rearrangement (OPTIMIZE) adds no new rows; its removes are checked below.
        return []
    return adds


def check_added_files(
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


def check_join_adds(winner: WinningCommit, ours: TxnView, skip: set[str], report: Reporter) -> None:
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
    same = same_rows(winner, ours, row_level_dv_updates(winner, ours))
    if same:
        # An UPDATE/MERGE of rows we also matched: its new row versions are the "added
        # data", but the truth to tell is the same-row write, which no predicate avoids.
        fail_same_rows(
            report,
            ConcurrentAppendError,
            "a concurrent commit rewrote rows this transaction matched (and added their "
            "new versions, which this transaction should have read)",
            rule=f"{rule}; the winner also deleted rows we matched (same-row write, row level)",
            partitions=partitions,
            files=[a.path for a in hits],
            rows=same,
            ours=ours,
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
    return sentence(tips)
