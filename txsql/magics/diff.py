"""``%txsql diff t [v1 [v2]] [--key col[,col...]]``: the rows that changed between two versions.

Both versions are read by time travel and compared by Spark with ``exceptAll`` (a multiset
difference, so duplicate rows count): rows only in the new version were added, rows only in
the old one removed. A table with a change data feed over the range is diffed from the feed
instead: only the changed rows are read, and since ``new = old + arrived - went`` (as
multisets), ``arrived exceptAll went`` is exactly ``new exceptAll old``.

Pairing rule (an UPDATE shows as one row, old → new): the changed rows are ordered by the
key columns (``--key``, default the table's first column). A removed row and an added row
with the same key, each the only one on its side with that key, are one *updated* row; all
other changed rows stay ``+`` (added) or ``−`` (removed). A key that an UPDATE changed, or
a key shared by several rows, therefore shows as a removal plus an addition.

One ``take(limit + 1)`` over the ordered union fetches what is shown; nothing is counted
first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from txsql.engine.names import fresh_name
from txsql.errors import ChangeDataFeedError, SqlError
from txsql.magics.errors import MagicUsageError
from txsql.magics.render import (
    CELL_STYLE,
    MUTED,
    Column,
    esc,
    text_table,
    value_html,
    value_text,
)

CHANGE = "__txsql_change"  # base name of the +/- column
KEY_FLAG = "--key"


@dataclass(frozen=True, slots=True)
class DiffArgs:
    """What ``%txsql diff`` was asked: the table, two optional versions and the key."""

    table: str
    v1: int | None
    v2: int | None
    key: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Change:
    """One changed row: ``+`` (only ``new``), ``-`` (only ``old``) or ``~`` (both)."""

    sign: str
    old: tuple[Any, ...] | None
    new: tuple[Any, ...] | None


def parse_diff_args(words: list[str]) -> DiffArgs:
    """Split ``t [v1 [v2]] [--key a,b]`` (the table may be a quoted path with spaces).

    >>> parse_diff_args(["t", "1", "3"])
    DiffArgs(table='t', v1=1, v2=3, key=())
    >>> parse_diff_args(["delta.`/a", "b`", "2", "--key", "id,day"])
    DiffArgs(table='delta.`/a b`', v1=2, v2=None, key=('id', 'day'))
    """
    rest = list(words)
    key: tuple[str, ...] = ()
    for i, word in enumerate(rest):
        name, _, inline = word.partition("=")
        if name == KEY_FLAG:
            value = inline or (rest[i + 1] if i + 1 < len(rest) else "")
            key = tuple(c.strip() for c in value.split(",") if c.strip())
            if not key:
                raise MagicUsageError(
                    "--key needs column names", hint="e.g. %txsql diff orders 3 5 --key id"
                )
            del rest[i : i + (1 if inline else 2)]
            break
    versions: list[int] = []
    while rest and len(versions) < 2 and rest[-1].isdigit():
        versions.insert(0, int(rest.pop()))
    if not rest:
        raise MagicUsageError(
            "diff needs a table", hint="e.g. %txsql diff orders 3 5  (rows changed 3 → 5)"
        )
    v1 = versions[0] if versions else None
    v2 = versions[1] if len(versions) > 1 else None
    return DiffArgs(" ".join(rest), v1, v2, key)


def version_diff(
    session: Any,
    table: str,
    v1: int | None,
    v2: int | None,
    limit: int | None,
    key: Sequence[str] = (),
) -> DiffView:
    """Rows added, removed and updated going from version ``v1`` to ``v2`` of ``table``.

    Args:
        session: the txsql Session.
        table: a table name or ``delta.`/path```.
        v1: the old version (default: the one before ``v2``).
        v2: the new version (default: the newest).
        limit: at most this many changed rows are fetched; None fetches all.
        key: the columns that pair a removed row with an added row (default: the first).
    """
    handle = session.table(table)
    new = v2 if v2 is not None else handle.version()
    old = v1 if v1 is not None else new - 1
    if old < 0:
        raise MagicUsageError(f"{table} has no version before v{new}", hint="Name two versions.")
    before = handle.to_spark(version=old)
    after = handle.to_spark(version=new)
    if [(f.name, f.dataType) for f in before.schema] != [
        (f.name, f.dataType) for f in after.schema
    ]:
        raise SqlError(
            f"the schema of {table} changed between v{old} and v{new}",
            hint="Diff versions that share a schema, or compare them with SELECTs.",
        )
    key_columns = _key_columns(table, before.columns, key)
    # Deferred: %load_ext imports this module and must not wait for pyspark.
    from pyspark.sql import functions as F

    change = fresh_name(CHANGE, before.columns)  # a table column may be "__txsql_change"
    plus, minus = _feed_changes(handle, old, new, before.columns) or (after, before)
    added = plus.exceptAll(minus).select(F.lit("+").alias(change), "*")
    removed = minus.exceptAll(plus).select(F.lit("-").alias(change), "*")
    # Ordered by key so the two halves of an update are next to each other; "-" sorts
    # before "+" only for a stable display.
    order = [F.col("`" + c.replace("`", "``") + "`") for c in key_columns]
    changes = added.union(removed).orderBy(*order, F.col(change).desc())
    columns = tuple(Column(f.name, f.dataType.simpleString()) for f in before.schema)
    try:
        rows = changes.take(limit + 1) if limit is not None else changes.collect()
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SqlError(
            f"cannot diff {table} v{old} and v{new}: {first}",
            hint="Map columns cannot be compared; diff a SELECT without them.",
        ) from None
    truncated = limit is not None and len(rows) > limit
    shown = rows[:limit] if limit is not None else rows
    positions = [before.columns.index(c) for c in key_columns]
    signed = [(str(r[0]), tuple(r)[1:]) for r in shown]
    return DiffView(table, old, new, columns, pair_changes(signed, positions, truncated), truncated)


def _feed_changes(handle: Any, old: int, new: int, columns: list[str]) -> tuple[Any, Any] | None:
    """(rows that arrived, rows that went) from ``old`` to ``new`` by the change data feed,
    or None when the feed does not cover the versions in between."""

    if old == new:
        return None
    low, high = min(old, new), max(old, new)
    try:
        feed = handle.changes(low + 1, high)
    except ChangeDataFeedError:
        return None  # no feed for (part of) the range: compare the two versions instead
    if feed.columns[: len(columns)] != columns:
        return None
    # Deferred: %load_ext imports this module and must not wait for pyspark.
    from pyspark.sql import functions as F

    kept = [F.col("`" + c.replace("`", "``") + "`") for c in columns]
    arrived = feed.where("_change_type IN ('insert', 'update_postimage')").select(*kept)
    went = feed.where("_change_type IN ('delete', 'update_preimage')").select(*kept)
    return (arrived, went) if new > old else (went, arrived)


def _key_columns(table: str, names: list[str], key: Sequence[str]) -> list[str]:
    if not key:
        return names[:1]
    by_lower = {n.lower(): n for n in names}
    missing = [k for k in key if k.lower() not in by_lower]
    if missing:
        raise MagicUsageError(
            f"{table} has no column {missing[0]!r} for --key",
            hint=f"Its columns: {', '.join(names)}.",
        )
    return [by_lower[k.lower()] for k in key]


def pair_changes(
    rows: Sequence[tuple[str, tuple[Any, ...]]], key: Sequence[int], truncated: bool = False
) -> tuple[Change, ...]:
    """Group rows ordered by key; a lone ``-`` and a lone ``+`` with one key are an update.

    When the fetch was cut (``truncated``) the last key group may be missing its partner,
    so it is dropped rather than shown as an unpaired row.

    >>> pair_changes([("-", (1, "a")), ("+", (1, "b")), ("+", (2, "c"))], [0])
    (Change(sign='~', old=(1, 'a'), new=(1, 'b')), Change(sign='+', old=None, new=(2, 'c')))
    """
    groups: list[list[tuple[str, tuple[Any, ...]]]] = []
    for sign, row in rows:
        here = tuple(row[i] for i in key)
        if groups and tuple(groups[-1][0][1][i] for i in key) == here:
            groups[-1].append((sign, row))
        else:
            groups.append([(sign, row)])
    if truncated and len(groups) > 1:
        groups.pop()
    changes: list[Change] = []
    for group in groups:
        signs = sorted(sign for sign, _ in group)
        if signs == ["+", "-"]:
            old = next(row for sign, row in group if sign == "-")
            new = next(row for sign, row in group if sign == "+")
            changes.append(Change("~", old, new))
            continue
        for sign, row in group:
            changes.append(Change(sign, row if sign == "-" else None, row if sign == "+" else None))
    return tuple(changes)


def _cell_text(change: Change, index: int) -> tuple[str, bool]:
    """The cell's text and whether the update changed it (``old → new``)."""
    if change.sign == "~":
        assert change.old is not None and change.new is not None
        before, after = change.old[index], change.new[index]
        if before != after:
            return f"{value_text(before)} → {value_text(after)}", True
        return value_text(after), False
    row = change.new if change.sign == "+" else change.old
    assert row is not None
    return value_text(row[index]), False


class DiffView:
    """The changed rows: ``+`` added, ``−`` removed, ``~`` updated (old → new)."""

    def __init__(
        self,
        table: str,
        old: int,
        new: int,
        columns: tuple[Column, ...],
        changes: tuple[Change, ...],
        truncated: bool,
    ) -> None:
        self.table = table
        self.old = old
        self.new = new
        self.columns = columns
        self.changes = changes
        self.truncated = truncated

    @property
    def added(self) -> list[tuple[Any, ...]]:
        return [c.new for c in self.changes if c.sign == "+" and c.new is not None]

    @property
    def removed(self) -> list[tuple[Any, ...]]:
        return [c.old for c in self.changes if c.sign == "-" and c.old is not None]

    @property
    def updated(self) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """``(old row, new row)`` per updated row."""
        return [(c.old, c.new) for c in self.changes if c.old is not None and c.new is not None]

    def _title(self) -> str:
        return (
            f"{self.table}: v{self.old} → v{self.new} · {len(self.added)} added, "
            f"{len(self.updated)} updated, {len(self.removed)} removed"
            + (" (first rows only)" if self.truncated else "")
        )

    def _repr_html_(self) -> str:
        head = "".join(
            f'<th style="{CELL_STYLE};text-align:left">{esc(c.name)}<br>'
            f'<span style="{MUTED};font-weight:normal;font-size:11px">{esc(c.type)}</span></th>'
            for c in self.columns
        )
        colors = {"+": "#2e7d32", "-": "#c62828", "~": "#ef6c00"}
        marks = {"+": "+", "-": "−", "~": "~"}
        body = []
        for change in self.changes:
            color = colors[change.sign]
            cells = []
            for i in range(len(self.columns)):
                if change.sign == "~":
                    text, changed = _cell_text(change, i)
                    weight = ";font-weight:600" if changed else ""
                    cells.append(f'<td style="{CELL_STYLE}{weight}">{esc(text)}</td>')
                else:
                    row = change.new if change.sign == "+" else change.old
                    assert row is not None
                    cells.append(value_html(row[i]))
            body.append(
                f'<tr><td style="{CELL_STYLE};color:{color};font-weight:600">'
                f"{marks[change.sign]}</td>{''.join(cells)}</tr>"
            )
        note = "paired by key: ~ rows show old → new" + (
            "; first rows only" if self.truncated else ""
        )
        return (
            f'<div class="txsql-diff"><div style="font-size:12px">{esc(self._title())}</div>'
            f'<table style="border-collapse:collapse;font-size:12px"><thead><tr>'
            f'<th style="{CELL_STYLE}"></th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f'</table><div style="{MUTED};font-size:11px">{esc(note)}</div></div>'
        )

    def __repr__(self) -> str:
        columns = (Column("±", ""), *self.columns)
        rows = [
            (
                "−" if c.sign == "-" else c.sign,
                *(_cell_text(c, i)[0] for i in range(len(self.columns))),
            )
            for c in self.changes
        ]
        return "\n".join([self._title(), text_table(columns, rows)])
