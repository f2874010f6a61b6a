"""Conflict steps 6-7: files (or rows) a winner deleted that we read or also delete.

Row level judges the winner's decidable DV updates row by row and, where they touch other
rows than ours, plans the DV rebases (:class:`~txsql.txn.rowlevel.rebase.Rebases`); file
level is Delta Spark's path-against-path rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyroaring import BitMap64

from txsql.errors import ConcurrentDeleteDeleteError, ConcurrentDeleteReadError
from txsql.log.actions import RemoveFile
from txsql.txn.conflicts.report import partition_labels, partition_predicate_example, sentence
from txsql.txn.conflicts.same_rows import fail_same_rows, same_rows
from txsql.txn.conflicts.view import Check, TxnView, file_actions
from txsql.txn.isolation import changes_no_data
from txsql.txn.join_read import harmless_removes
from txsql.txn.rowlevel.rebase import Rebase
from txsql.txn.winner import WinningCommit


def check_row_level_deletes(check: Check) -> None:
    """Row-level steps 6 and 7 for the winner's decidable DV updates; plan the rebases."""
    winner, ours, report, paths = check.winner, check.ours, check.report, check.row_level
    state = ours.rows
    if state is None or not paths:
        return
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
    if read_hits:
        fail_same_rows(
            report,
            ConcurrentDeleteReadError,
            "a concurrent commit deleted or updated rows this transaction read",
            rule="rows we matched were deleted by the winner (row level)",
            partitions=_labels(winner, read_hits),
            files=list(read_hits),
            rows=read_hits,
            ours=ours,
        )
    if write_hits:
        fail_same_rows(
            report,
            ConcurrentDeleteDeleteError,
            "a concurrent commit deleted or updated rows this transaction also changes",
            rule="both transactions deleted the same rows (row level)",
            partitions=_labels(winner, write_hits),
            files=list(write_hits),
            rows=write_hits,
            ours=ours,
        )
    check.outcome.rebases.extend(rebases)


def _labels(winner: WinningCommit, paths: Iterable[str]) -> tuple[str, ...]:
    return partition_labels(winner.dv_updates[p][1].partition_values for p in paths)


def _removed(check: Check) -> dict[str, RemoveFile]:
    """The winner's removes the file-level rule judges."""
    return {p: r for p, r in check.winner.removes.items() if p not in check.skipped}


def check_deleted_files(check: Check) -> None:
    """Step 6 at file level: a file we read was removed (or we read the whole table)."""
    winner, ours, report = check.winner, check.ours, check.report
    removed = _removed(check)
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
        rewrite = changes_no_data(file_actions(winner))
        same = {p: r for p, r in same_rows(winner, ours, check.skipped).items() if p in removed}
        if same and not rewrite:
            fail_same_rows(
                report,
                ConcurrentDeleteReadError,
                "a concurrent commit deleted or updated rows this transaction read",
                rule=f"{rule}; it held rows we matched (same-row write, row level)",
                partitions=partition_labels(removed[p].partition_values for p in same),
                files=[removed[p].path for p in same],
                rows=same,
                ours=ours,
            )
        report.fail(
            ConcurrentDeleteReadError,
            "a concurrent commit removed data this transaction read",
            rule=rule,
            partitions=partition_labels(removed[p].partition_values for p in hit),
            files=[removed[p].path for p in hit],
            hint=_delete_hint(winner, ours, [removed[p] for p in hit]),
        )


def check_both_deleted(check: Check) -> None:
    """Step 7 at file level: both transactions removed the same file."""
    winner, ours = check.winner, check.ours
    removed = _removed(check)
    both = sorted(set(removed) & ours.removed_paths)
    if both:
        check.report.fail(
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
    if ours.rows is not None and changes_no_data(file_actions(winner)):
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
    return sentence(tips)
