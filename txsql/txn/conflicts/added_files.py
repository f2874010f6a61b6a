"""Conflict step 5: files a winner added that our transaction should have read.

File level is Delta Spark's rule (only the partition conjuncts of our read predicates
count); row level also uses stats and the ``row_checker`` hook, and MERGE join reads ask
the ``join_checker`` hook whether an added row joins with the source.
"""

from __future__ import annotations

from collections.abc import Sequence

from txsql.errors import ConcurrentAppendError
from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.log.predicate_eval import eval_partition
from txsql.log.predicates import TRUE, Predicate, split_predicate
from txsql.txn.conflicts.report import partition_labels, partition_predicate_example, sentence
from txsql.txn.conflicts.same_rows import fail_same_rows, same_rows
from txsql.txn.conflicts.view import Check, TxnView, file_actions
from txsql.txn.isolation import IsolationLevel, changes_no_data
from txsql.txn.readset import ScanRecord
from txsql.txn.winner import WinningCommit


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


def check_added_files(check: Check) -> None:
    """Step 5: a winner's added file whose rows our read predicates may select conflicts."""
    winner, ours = check.winner, check.ours
    adds = _candidate_adds(winner, ours, check.skipped)
    if not adds:
        return
    read = ours.read_set
    if read.read_whole_table:
        _append_conflict(check, adds, TRUE, "we read the whole table")
    for scan in _distinct_scans(read.scans):
        hits = _matching_adds(scan, adds, ours)
        if not hits:
            continue
        checker = ours.row_checker if ours.rows is not None and scan.deterministic else None
        if checker is not None and not checker(scan.predicate, hits):
            continue  # the added rows were evaluated and none satisfies our predicate
        _append_conflict(check, hits, scan.predicate, _rule(ours, scan))


def check_join_adds(check: Check) -> None:
    """Step 5 for MERGE join reads: conflict only if an added row joins with our source.

    Applies in file-level mode too: the hook's answer is exact, not a stats guess.
    """
    winner, ours = check.winner, check.ours
    if not ours.read_set.joins:
        return
    adds = _candidate_adds(winner, ours, check.skipped)
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
        _append_conflict(check, hits, join.target_filter, rule)


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
    check: Check, hits: Sequence[AddFile], predicate: Predicate, rule: str
) -> None:
    winner, ours, report = check.winner, check.ours, check.report
    partitions = partition_labels(a.partition_values for a in hits)
    same = same_rows(winner, ours, check.decidable)
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


def check_any_data_change(check: Check) -> None:
    """Steps 5-6 for a transaction counted as having read its whole table at file level
    (a prepared one: its read set did not survive): any data change conflicts, except a
    blind append under WriteSerializable, and nothing conflicts with a blind append."""
    winner, ours = check.winner, check.ours
    if ours.blind_append:
        return
    changed = any(a.data_change for a in winner.adds.values()) or any(
        r.data_change for r in winner.removes.values()
    )
    if not changed:
        return
    if ours.isolation is IsolationLevel.WRITE_SERIALIZABLE and winner.is_blind_append:
        return
    check.report.fail(
        ConcurrentAppendError,
        "a concurrent commit changed data of a table this transaction read",
        rule="it changed data of a table this transaction read (a prepared transaction "
        "counts as having read its whole tables)",
        files=[a.path for a in winner.adds.values()] or [r.path for r in winner.removes.values()],
        hint=f"Run the transaction again: it will read the table as of version {winner.version}.",
    )
