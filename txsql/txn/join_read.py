"""A MERGE's read: "the target rows that join with our source under ON".

A MERGE whose ON condition has no target-only conjunct would otherwise have to be recorded
as a read of the whole table, so any concurrent append would conflict with it (Delta's
most common complaint). Instead the planner records a :class:`~txsql.txn.readset.JoinRead`:
the ON condition as Spark SQL over the two aliases and an opaque handle on the source rows
as the MERGE saw them. The conflict checker then asks a hook
(:data:`~txsql.txn.hooks.JoinChecker`, provided by the planner
because this layer must not import Spark) whether a winner's changed rows could join with
that source:

* rows the winner *added* (new files, rewritten files, revived rows): conflict only if
  one of them joins with our source;
* rows the winner *deleted* from a file we read: a DV update is judged row by row against
  the rows the MERGE matched (recorded per file like UPDATE/DELETE); a removed file
  conflicts only if it held a row that joined (known from the matched rows, or asked of the
  hook with the file as we read it).

This module records it in the read set and holds the pure decisions; it imports nothing
from Spark.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyroaring import BitMap64

from txsql.log.actions import RemoveFile
from txsql.txn.hooks import JoinChecker
from txsql.txn.readset import JoinRead, ReadSet, norm_path


def record_join(
    read_set: ReadSet, join: JoinRead, matched_rows: Mapping[str, BitMap64] | None
) -> None:
    """Add ``join`` to ``read_set``: its files count as read, with the rows it matched.

    Unlike a scan, a join read adds no predicate: appends are judged by the join hook.
    ``matched_rows`` (path -> row indexes) are the target rows the MERGE matched or changed;
    None means they are unknown (an insert-only MERGE), so those files' deletes are
    judged by the hook against the file as it was read.
    """
    read_set.joins.append(join)
    for f in join.files:
        path = norm_path(f.path)
        read_set.files.add(path)
        read_set.file_dvs.setdefault(path, f.dv_id)
    if matched_rows is None:
        read_set.rows_unknown.update(norm_path(f.path) for f in join.files)
        return
    matched = {norm_path(k): v for k, v in matched_rows.items()}
    for path in join.paths:
        # A read file absent from matched_rows matched no row: an empty set, not unknown.
        rows = read_set.rows.setdefault(path, BitMap64())
        rows |= matched.get(path, BitMap64())


def join_only_paths(read_set: ReadSet) -> set[str]:
    """Read paths that only join reads read (no scan with a predicate covers them)."""
    if read_set.read_whole_table or not read_set.joins:
        return set()
    scanned = {p for scan in read_set.scans for p in scan.paths}
    return {p for join in read_set.joins for p in join.paths} - scanned


def harmless_removes(
    read_set: ReadSet,
    removed: Mapping[str, RemoveFile],
    checker: JoinChecker | None,
) -> set[str]:
    """Removed paths we read only through joins and whose rows joined with no source.

    Such a removal deletes no row our MERGE matched, so its result is unchanged (what the
    winner re-adds is judged as added rows). A file whose matched rows are known is
    decided from them; otherwise the hook checks the file as we read it.
    """
    out = set()
    for path in sorted(join_only_paths(read_set) & set(removed)):
        if read_set.rows_known(path):
            if not read_set.rows[path]:
                out.add(path)
            continue
        if checker is None:
            continue
        reads = [(j, f) for j in read_set.joins if (f := j.file(path)) is not None]
        if all(not checker(j, [f]) for j, f in reads):
            out.add(path)
    return out
