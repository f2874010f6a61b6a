"""Compaction and DML both commit: row positions translated through a compaction's row map.

txsql's bin-packing OPTIMIZE / REORG ... PURGE writes each bin as one output file by
concatenating its source files in a recorded order, skipping the rows their deletion
vectors delete. So the output position of every surviving source row is recomputable from
the list of (source path, physical row count, source DV) per output file: the *row map*,
stored in the commit's ``operationParameters`` under :data:`ROW_MAP_PARAM` (Delta readers
ignore unknown parameters). A sorting compaction (ZORDER, clustering) also records the
rows' order in a file (:mod:`txsql.txn.rowlevel.sort_map`). The source DV recorded there is
the *layout* DV, the one the rows were copied under; it stays the reference for positions
even when the compaction later carries a concurrent DML's deletions (as DVs on its outputs).

Two races become non-conflicts:

* a DML that lost to a mapped compaction moves its deletions (and its read rows) from the
  removed source files to the compaction's outputs (:func:`plan_dml_translation`);
* a compaction that lost to a DML re-marks the DML's newly deleted source rows with DVs on
  its own outputs (:func:`plan_carry`).

Anything that cannot be translated exactly (no map: a foreign engine, a table without
deletion vectors; an unreadable row order; a DV that shrank; a winner that started from a
DV we do not know) returns ``None`` and the caller's file-level rules raise the usual
conflict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyroaring import BitMap64

from txsql.log import features, properties
from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from txsql.txn.isolation import changes_no_data
from txsql.txn.readset import ReadSet, norm_path
from txsql.txn.rowlevel.rebase import Carry, DmlTranslation
from txsql.txn.rowlevel.row_map import (
    RowMap,
    SortedBin,
    UntranslatableError,
    decode_row_map,
    live_rows,
    output_counts,
    translate,
)
from txsql.txn.rowlevel.sort_map import load_order, translate_sorted
from txsql.txn.rowlevel.state import RowLevelState, num_records
from txsql.txn.winner import WinningCommit


def _matches_actions(row_map: RowMap, actions: Sequence[Action]) -> bool:
    """The map describes exactly these file actions, and they change no data."""
    files = [a for a in actions if isinstance(a, (AddFile, RemoveFile))]
    if not changes_no_data(files):
        return False
    removed = {norm_path(a.path) for a in files if isinstance(a, RemoveFile)}
    added = {norm_path(a.path) for a in files if isinstance(a, AddFile)}
    return removed == row_map.source_paths and added == row_map.output_paths


def can_write_dvs(protocol: Protocol, metadata: Metadata) -> bool:
    """Translations write DVs: only on tables whose protocol and settings allow them."""
    return "deletionVectors" in features.writer_features(
        protocol
    ) and properties.deletion_vectors_enabled(metadata.configuration)


def winner_row_map(winner: WinningCommit) -> RowMap | None:
    """The row map of a winning txsql compaction, if it has one that fits its actions."""
    info = winner.commit_info
    if info is None:
        return None
    row_map = decode_row_map(info.operation_parameters)
    if row_map is None or not _matches_actions(row_map, winner.actions):
        return None
    return row_map if _counts_agree(row_map, winner) else None


def _counts_agree(row_map: RowMap, winner: WinningCommit) -> bool:
    """Row counts in the map agree with the commit's stats (a map we can trust)."""
    for b in row_map.bins:
        for s in b.sources:
            logged = num_records(winner.removes[s.path].stats)
            if logged is not None and logged != s.rows:
                return False
        outputs = output_counts(b)
        # A sorted bin's outputs hold exactly its live rows (none: every row was deleted).
        if isinstance(b, SortedBin) and sum(n for _, n in b.outputs) != live_rows(b.sources):
            return False
        for path, n in outputs:
            if num_records(winner.adds[path].stats) != (live_rows(b.sources) if n is None else n):
                return False
    return True


def _translate(
    row_map: RowMap, row_sets: Sequence[Mapping[str, BitMap64]], state: RowLevelState
) -> list[dict[str, BitMap64]]:
    """Each set of source rows -> output rows by the map's kind, the layout DVs and a
    sort's order loaded once for all of them (raises UntranslatableError)."""
    layout = layout_bitmaps(row_map, state)
    if row_map.order_file is None:
        return [translate(row_map, rows, layout) for rows in row_sets]
    if not any(any(rows.values()) for rows in row_sets):
        return [{} for _ in row_sets]
    orders = load_order(row_map, state.table_root, state.fs)
    if orders is None:
        raise UntranslatableError(f"row order {row_map.order_file} is unreadable")
    return [translate_sorted(row_map, orders, rows, layout) for rows in row_sets]


def own_row_map(parameters: Mapping[str, Any], actions: Sequence[Action]) -> RowMap | None:
    """Our own compaction's row map (None for any other kind of transaction)."""
    row_map = decode_row_map(parameters)
    if row_map is None or not _matches_actions(row_map, actions):
        return None
    return row_map


def layout_bitmaps(row_map: RowMap, state: RowLevelState) -> dict[str, BitMap64]:
    return {s.path: state.load(s.layout_dv) for b in row_map.bins for s in b.sources}


def _all_rows(n: int) -> BitMap64:
    rows = BitMap64()
    rows.add_range(0, n)
    return rows


# --- a DML that lost to a compaction --------------------------------------------------------


def plan_dml_translation(
    winner: WinningCommit, state: RowLevelState, read_set: ReadSet
) -> DmlTranslation | None:
    """Translate our reads and deletions through ``winner``'s row map, or None (conflict)."""
    row_map = winner_row_map(winner)
    if row_map is None:
        return None
    ours: dict[str, BitMap64] = {}
    read: dict[str, BitMap64] = {}
    unknown_sources: set[str] = set()
    touched: set[str] = set()
    for path in row_map.source_paths:
        if path not in read_set.files and not state.modifies(path):
            continue
        touched.add(path)
        # Our positions are relative to the DV we are based on; the compaction must have
        # removed exactly that logical file.
        if path not in state.base or state.base_id(path) != winner.removes[path].dv_id:
            return None
        if state.modifies(path):
            mine = state.our_rows(path)
            if mine is None:
                return None
            ours[path] = mine
        if path in read_set.files:
            if read_set.rows_known(path):
                read[path] = read_set.rows[path]
            else:
                unknown_sources.add(path)
    if not touched:
        return DmlTranslation(frozenset(), {}, {}, frozenset(), dict(winner.adds))
    try:
        deletes, read_rows = _translate(row_map, [ours, read], state)
    except UntranslatableError:
        return None
    unknown = {
        path
        for b in row_map.bins
        if any(s.path in unknown_sources for s in b.sources)
        for path, _ in output_counts(b)
    }
    return DmlTranslation(frozenset(touched), deletes, read_rows, frozenset(unknown), winner.adds)


# --- a compaction that lost to a DML --------------------------------------------------------


def plan_carry(
    winner: WinningCommit,
    row_map: RowMap,
    state: RowLevelState,
    removes: Mapping[str, RemoveFile],
) -> Carry | None:
    """The winner's new deletions on our source files as rows of our outputs, or None."""
    touched = row_map.source_paths & set(winner.removes)
    if not touched:
        return Carry({}, {})
    if changes_no_data([a for a in winner.actions if isinstance(a, (AddFile, RemoveFile))]):
        return None  # another compaction rewrote our sources: both cannot commit
    sizes = {s.path: s.rows for b in row_map.bins for s in b.sources}
    newly: dict[str, BitMap64] = {}
    sources: dict[str, RemoveFile] = {}
    for path in touched:
        theirs = winner.removes[path]
        if theirs.dv_id != removes[path].dv_id:
            return None  # the winner started from a version of the file we did not copy
        before = state.load(theirs.deletion_vector)
        readd = winner.adds.get(path)
        if readd is None:
            after = _all_rows(sizes[path])
            sources[path] = replace(theirs, data_change=False)
        elif readd.deletion_vector is None:
            return None  # re-added without a DV: rows came back, not translatable
        else:
            after = state.load(readd.deletion_vector)
            if before - after:
                return None  # the DV shrank (rows revived): our outputs lack them
            sources[path] = readd.to_remove(data_change=False)
        newly[path] = after - before
    try:
        [deletes] = _translate(row_map, [newly], state)
    except UntranslatableError:
        return None
    return Carry(sources, deletes)
