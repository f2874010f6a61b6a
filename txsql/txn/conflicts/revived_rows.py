"""Conflict step 5b: rows a winner revived, and live paths it re-added.

A winner whose DV for a file is not a superset of the one we are based on (RESTORE, a
foreign writer, any DV replacement) *revived* rows: for our reads they are added rows,
checked row by row through the row hook (:func:`check_revived_rows`). A winner that adds
a path we change without removing it cannot be judged at all
(:func:`check_readds_without_remove`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyroaring import BitMap64

from txsql.errors import ConcurrentAppendError, ConcurrentDeleteDeleteError
from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.txn.conflicts.report import partition_labels
from txsql.txn.conflicts.same_rows import row_details
from txsql.txn.conflicts.view import Check
from txsql.txn.hooks import RowJoinChecker, RowSetChecker
from txsql.txn.isolation import IsolationLevel


def check_revived_rows(check: Check) -> None:
    """Rows revived by the winner are rows *added* for our reads: check them row by row."""
    winner, ours, paths = check.winner, check.ours, check.row_level
    state = ours.rows
    if state is None or not paths:
        return
    if ours.isolation is IsolationLevel.SNAPSHOT_ISOLATION or ours.blind_append:
        return  # as for appended files: such transactions read nothing that can go stale
    revived = {
        p: (winner.dv_updates[p][1], bits)
        for p in sorted(paths)
        if (bits := state.revived(p, winner.dv_updates[p][1]))
    }
    if not revived:
        return
    _check_revived_against_joins(check, revived)
    checker = ours.row_checker
    for scan in {scan.predicate: scan for scan in ours.read_set.scans}.values():
        candidates = {
            p: fr
            for p, fr in revived.items()
            if not scan.deterministic
            or may_match_file(
                scan.predicate,
                fr[0],
                ours.schema,
                ours.partition_columns,
                ours.column_mapping_mode,
            )
        }
        if not candidates:
            continue
        if scan.deterministic and isinstance(checker, RowSetChecker):
            hits = {
                p: fr for p, fr in candidates.items() if checker.rows_match(scan.predicate, {p: fr})
            }
            rule = "rows the winner revived (its DV shrank) satisfy our read predicate"
        else:
            hits = candidates
            rule = (
                "the winner revived rows (its DV shrank) that may satisfy our read predicate "
                "(not checked row by row)"
            )
        if hits:
            _fail_revived(
                check,
                hits,
                "a concurrent commit revived rows this transaction should have read",
                rule,
                "rows your statement's condition selects, so a partition predicate will not "
                "help; re-run the statement: it will then see the revived rows.",
            )


def check_readds_without_remove(check: Check) -> None:
    """A winner that adds a path we change without removing our version of it.

    The protocol forbids two live files with one path; whatever the winner meant, rebasing
    onto it could keep or drop rows we cannot reason about, so we refuse.
    """
    winner, state = check.winner, check.ours.rows
    if state is None:
        return
    both = sorted(p for p in winner.readds_without_remove if p in state.base and state.modifies(p))
    if both:
        check.report.fail(
            ConcurrentDeleteDeleteError,
            "a concurrent commit re-added a file this transaction changes without removing it",
            rule="the winner added a live path again (cannot be decided row by row)",
            files=[winner.adds[p].path for p in both],
            hint=f"Re-run the statement on version {winner.version} or later.",
        )


def _check_revived_against_joins(
    check: Check, revived: Mapping[str, tuple[AddFile, BitMap64]]
) -> None:
    """A MERGE's join read: revived rows that join with its source are rows it missed.

    (A MERGE that inserted a key the winner brought back would otherwise duplicate it.)
    """
    ours = check.ours
    checker = ours.join_checker
    for join in ours.read_set.joins:
        candidates = {
            p: fr
            for p, fr in revived.items()
            if may_match_file(
                join.target_filter,
                fr[0],
                ours.schema,
                ours.partition_columns,
                ours.column_mapping_mode,
            )
        }
        if isinstance(checker, RowJoinChecker):
            hits = {p: fr for p, fr in candidates.items() if checker.rows_join(join, {p: fr})}
        else:
            hits = candidates
        if hits:
            _fail_revived(
                check,
                hits,
                "a concurrent commit revived rows that join with this MERGE's source",
                "rows the winner revived (its DV shrank) join with our MERGE source under ON",
                "rows that match your MERGE's source; re-run the MERGE: it will then see (and "
                "match) the revived rows.",
            )


def _fail_revived(
    check: Check,
    hits: Mapping[str, tuple[AddFile, BitMap64]],
    message: str,
    rule: str,
    what: str,
) -> None:
    """Raise the conflict for revived rows ``hits`` (path -> (winner's add, row indexes))."""
    winner, ours = check.winner, check.ours
    rows = {p: fr[1] for p, fr in hits.items()}
    check.report.fail(
        ConcurrentAppendError,
        message,
        rule=rule,
        partitions=partition_labels(fr[0].partition_values for fr in hits.values()),
        files=[fr[0].path for fr in hits.values()],
        rows=rows,
        row_details=row_details(ours, {p: fr[0] for p, fr in hits.items()}, rows),
        hint=f"Version {winner.version} ({winner.operation or 'a foreign writer'}) brought "
        f"back {what}",
    )
