"""Row-level conflict steps for winners that revive rows, and same-row conflict details.

A winner whose DV for a file is not a superset of the one we are based on (RESTORE, a
foreign writer, any DV replacement) *revived* rows: for our reads they are added rows,
checked row by row through the row hook (:func:`check_revived_rows`). Conflicts that come
from the same rows being written by both transactions name those rows, with key values
read at the winner's version when cheap (:func:`same_rows`, :func:`row_details`), and get a
hint that fits: no partition predicate avoids a same-row write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pyroaring import BitMap64

from txsql.errors import CommitConflictError, ConcurrentAppendError, ConcurrentDeleteDeleteError
from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.txn.conflicts.report import Reporter, colliding_rows, key_columns, partition_labels
from txsql.txn.hooks import RowJoinChecker, RowSetChecker
from txsql.txn.isolation import IsolationLevel
from txsql.txn.winner import WinningCommit

if TYPE_CHECKING:
    from txsql.txn.conflicts.checker import TxnView


def same_rows(winner: WinningCommit, ours: TxnView, paths: set[str]) -> dict[str, BitMap64]:
    """Rows we matched or changed that the winner deleted (row level only; else empty).

    Counts DV updates and plain removes of a whole file (an UPDATE of its last live rows).
    """
    state = ours.rows
    out: dict[str, BitMap64] = {}
    if state is None or ours.read_set.read_whole_table:
        return out
    deleted_by_path: dict[str, BitMap64 | None] = {
        p: state.newly_deleted(p, winner.dv_updates[p][1]) for p in paths
    }
    for path, remove in winner.removes.items():
        if path not in winner.adds:
            deleted_by_path[path] = state.removed_rows(path, remove)
    for path, deleted in sorted(deleted_by_path.items()):
        if deleted is None or (not ours.read_set.rows_known(path) and path in ours.read_set.files):
            continue
        touched = ours.read_set.rows.get(path, BitMap64())
        if state.modifies(path):
            mine = state.our_rows(path)
            if mine is None:
                continue
            touched = touched | mine
        if touched & deleted:
            out[path] = touched & deleted
    return out


def files_of(winner: WinningCommit, ours: TxnView, paths: Iterable[str]) -> dict[str, AddFile]:
    """The data file behind each path (the winner's add, else the one we read)."""
    out = {}
    for p in paths:
        add = winner.adds.get(p) or (ours.rows.read_file(p) if ours.rows else None)
        if add is not None:
            out[p] = add
    return out


def fail_same_rows(
    report: Reporter,
    error: type[CommitConflictError],
    message: str,
    *,
    rule: str,
    partitions: tuple[str, ...],
    files: Sequence[str],
    rows: Mapping[str, BitMap64],
    ours: TxnView,
) -> NoReturn:
    """Raise ``error`` for a same-row write: the card names the rows (and, when first
    asked, their key values); no predicate avoids it, so the hint says to re-run."""
    report.fail(
        error,
        message,
        rule=rule,
        partitions=partitions,
        files=files,
        rows=rows,
        row_details=row_details(ours, files_of(report.winner, ours, rows), rows),
        hint=same_row_hint(report.winner),
    )


def same_row_hint(winner: WinningCommit) -> str:
    who = f"version {winner.version} ({winner.operation or 'a foreign writer'})"
    return (
        f"The same rows were changed by {who}: that is a real conflict, which no partition "
        "predicate avoids. Re-run the statement; it will see that change and decide again "
        "which rows match (or make the writers of these rows take turns)."
    )


# --- step 5b: rows a winner revived (its new DV is not a superset of our base) ----------


def check_revived_rows(
    winner: WinningCommit, ours: TxnView, paths: set[str], report: Reporter
) -> None:
    """Rows revived by the winner are rows *added* for our reads: check them row by row."""
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
    _check_revived_against_joins(winner, ours, revived, report)
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
                winner,
                ours,
                hits,
                report,
                "a concurrent commit revived rows this transaction should have read",
                rule,
                "rows your statement's condition selects, so a partition predicate will not "
                "help; re-run the statement: it will then see the revived rows.",
            )


def check_readds_without_remove(winner: WinningCommit, ours: TxnView, report: Reporter) -> None:
    """A winner that adds a path we change without removing our version of it.

    The protocol forbids two live files with one path; whatever the winner meant, rebasing
    onto it could keep or drop rows we cannot reason about, so we refuse.
    """
    state = ours.rows
    if state is None:
        return
    both = sorted(p for p in winner.readds_without_remove if p in state.base and state.modifies(p))
    if both:
        report.fail(
            ConcurrentDeleteDeleteError,
            "a concurrent commit re-added a file this transaction changes without removing it",
            rule="the winner added a live path again (cannot be decided row by row)",
            files=[winner.adds[p].path for p in both],
            hint=f"Re-run the statement on version {winner.version} or later.",
        )


def row_details(
    ours: TxnView, files: Mapping[str, AddFile], rows: Mapping[str, BitMap64]
) -> Callable[[], tuple[dict[str, Any], ...]]:
    """Reads the colliding rows' key values when first asked (the card shows them)."""
    columns = key_columns(ours.schema, (s.predicate for s in ours.read_set.scans))
    checker, files, rows = ours.row_checker, dict(files), dict(rows)
    return lambda: colliding_rows(checker, files, rows, columns)


def _check_revived_against_joins(
    winner: WinningCommit,
    ours: TxnView,
    revived: Mapping[str, tuple[AddFile, BitMap64]],
    report: Reporter,
) -> None:
    """A MERGE's join read: revived rows that join with its source are rows it missed.

    (A MERGE that inserted a key the winner brought back would otherwise duplicate it.)
    """
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
                winner,
                ours,
                hits,
                report,
                "a concurrent commit revived rows that join with this MERGE's source",
                "rows the winner revived (its DV shrank) join with our MERGE source under ON",
                "rows that match your MERGE's source; re-run the MERGE: it will then see (and "
                "match) the revived rows.",
            )


def _fail_revived(
    winner: WinningCommit,
    ours: TxnView,
    hits: Mapping[str, tuple[AddFile, BitMap64]],
    report: Reporter,
    message: str,
    rule: str,
    what: str,
) -> None:
    """Raise the conflict for revived rows ``hits`` (path -> (winner's add, row indexes))."""
    rows = {p: fr[1] for p, fr in hits.items()}
    report.fail(
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
