"""Rows both writers changed: found, named on the conflict card, and hinted at.

A conflict that comes from the same rows being written by both transactions names those
rows, with key values read at the winner's version when cheap (:func:`row_details`), and
gets a hint that fits: no partition predicate avoids a same-row write. Steps 5 to 7 use
these helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

from pyroaring import BitMap64

from txsql.errors import CommitConflictError
from txsql.log.actions import AddFile
from txsql.txn.conflicts.report import Reporter, colliding_rows, key_columns
from txsql.txn.conflicts.view import TxnView
from txsql.txn.winner import WinningCommit


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


def row_details(
    ours: TxnView, files: Mapping[str, AddFile], rows: Mapping[str, BitMap64]
) -> Callable[[], tuple[dict[str, Any], ...]]:
    """Reads the colliding rows' key values when first asked (the card shows them)."""
    columns = key_columns(ours.schema, (s.predicate for s in ours.read_set.scans))
    checker, files, rows = ours.row_checker, dict(files), dict(rows)
    return lambda: colliding_rows(checker, files, rows, columns)
