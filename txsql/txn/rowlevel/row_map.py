"""A compaction's row map: where each surviving source row lands in the output files.

txsql's bin-packing OPTIMIZE / REORG ... PURGE writes each bin as one output file by
concatenating its source files in order, skipping the rows their deletion vectors delete.
So every surviving row's output position follows from (source path, physical row count,
layout DV) per output file, stored as JSON in the commit's ``operationParameters`` under
:data:`ROW_MAP_PARAM` (Delta readers ignore unknown parameters): format 1.

A sorting rewrite (ZORDER, clustering) puts a bin's rows in an order no arithmetic gives:
format 2 keeps, per bin, its output files in order with their row counts
(:class:`SortedBin`), and the rows' order in a sidecar file named by ``RowMap.order_file``
(:mod:`txsql.txn.rowlevel.sort_map`). Pure data, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap64

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.txn.readset import norm_path

ROW_MAP_PARAM = "txsqlRowMap"
_FORMAT = 1
_SORTED_FORMAT = 2


class UntranslatableError(ValueError):
    """A row position that the row map cannot place (the caller falls back to a conflict)."""


@dataclass(frozen=True)
class Source:
    """One source file of an output, in concatenation order.

    Attributes:
        path: Normalized path of the source file.
        rows: Physical rows of the source file (``numRecords``).
        layout_dv: The DV the rows were copied under (its rows were skipped), or None.
    """

    path: str
    rows: int
    layout_dv: DeletionVectorDescriptor | None


@dataclass(frozen=True)
class OutputBin:
    """One output file (``None`` when every source row was deleted) and its sources."""

    path: str | None
    sources: tuple[Source, ...]


@dataclass(frozen=True)
class SortedBin:
    """One bin of a sorting rewrite: its output files in row order, each with its row
    count (none when every source row was deleted), and its sources."""

    outputs: tuple[tuple[str, int], ...]
    sources: tuple[Source, ...]


@dataclass(frozen=True)
class RowMap:
    """``bins`` are all :class:`OutputBin` (format 1) or all :class:`SortedBin` with the
    rows' order in ``order_file`` (a path relative to the table root; format 2)."""

    bins: tuple[OutputBin | SortedBin, ...]
    order_file: str | None = None

    @property
    def source_paths(self) -> set[str]:
        return {s.path for b in self.bins for s in b.sources}

    @property
    def output_paths(self) -> set[str]:
        return {path for b in self.bins for path, _ in output_counts(b)}


def output_counts(b: OutputBin | SortedBin) -> list[tuple[str, int | None]]:
    """A bin's output files with their row counts (None: the live rows of its sources)."""
    if isinstance(b, SortedBin):
        return list(b.outputs)
    return [] if b.path is None else [(b.path, None)]


def live_rows(sources: tuple[Source, ...]) -> int:
    """Rows the rewrite copied: physical rows minus those the layout DVs skip."""
    return sum(s.rows - (s.layout_dv.cardinality if s.layout_dv else 0) for s in sources)


def encode_row_map(row_map: RowMap) -> str:
    """The JSON text stored in ``operationParameters`` (compact: one entry per file)."""
    bins = [
        {
            "out": [list(o) for o in b.outputs] if isinstance(b, SortedBin) else b.path,
            "src": [
                {"p": s.path, "n": s.rows, "dv": s.layout_dv.to_json() if s.layout_dv else None}
                for s in b.sources
            ],
        }
        for b in row_map.bins
    ]
    if row_map.order_file is None:
        return json.dumps({"v": _FORMAT, "bins": bins}, separators=(",", ":"))
    text = {"v": _SORTED_FORMAT, "order": row_map.order_file, "bins": bins}
    return json.dumps(text, separators=(",", ":"))


def decode_row_map(parameters: Mapping[str, Any] | None) -> RowMap | None:
    """The row map in commit ``parameters``, or None if absent or unreadable."""
    text = (parameters or {}).get(ROW_MAP_PARAM)
    if not isinstance(text, str):
        return None
    try:
        obj = json.loads(text)
        sources = [
            tuple(
                Source(
                    norm_path(s["p"]),
                    int(s["n"]),
                    DeletionVectorDescriptor.from_json(s["dv"]) if s["dv"] else None,
                )
                for s in b["src"]
            )
            for b in obj["bins"]
        ]
        if obj.get("v") == _SORTED_FORMAT:
            order = obj["order"]
            if not isinstance(order, str):
                return None
            outputs = [tuple((norm_path(p), int(n)) for p, n in b["out"]) for b in obj["bins"]]
            return RowMap(tuple(SortedBin(o, s) for o, s in zip(outputs, sources)), order)
        if obj.get("v") != _FORMAT:
            return None
        outs = [norm_path(b["out"]) if b["out"] is not None else None for b in obj["bins"]]
        return RowMap(tuple(OutputBin(o, s) for o, s in zip(outs, sources)))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def translate(
    row_map: RowMap, rows: Mapping[str, BitMap64], layout: Mapping[str, BitMap64]
) -> dict[str, BitMap64]:
    """Source row indexes -> output row indexes.

    Args:
        row_map: The compaction's map.
        rows: Rows to move, per source path (physical row indexes of the source).
        layout: Each source's layout-DV rows (rows that were not copied).

    Raises:
        UntranslatableError: A row was not copied (deleted by the layout DV or past the end).
    """
    out: dict[str, BitMap64] = {}
    for b in row_map.bins:
        assert isinstance(b, OutputBin), "a sorted map translates through sort_map"
        offset = 0
        for s in b.sources:
            skipped = layout.get(s.path, BitMap64())
            wanted = rows.get(s.path)
            if wanted:
                if b.path is None or wanted.max() >= s.rows or wanted & skipped:
                    raise UntranslatableError(f"rows of {s.path} were not copied by compaction")
                target = out.setdefault(b.path, BitMap64())
                for r in wanted:
                    # Output position = rows copied before this source + live rows before r.
                    target.add(offset + r - skipped.rank(r))
            offset += s.rows - len(skipped)
    return out
