"""``%txsql diff t v1 v2``: the rows added and removed between two versions of a table.

Both versions are read by time travel and compared by Spark with ``exceptAll`` (a multiset
difference, so duplicate rows count). One ``take(limit + 1)`` over the union of both
directions fetches what is shown; nothing is counted first.
"""

from __future__ import annotations

from typing import Any

from txsql.engine.names import fresh_name
from txsql.errors import SqlError
from txsql.magics.errors import MagicUsageError
from txsql.magics.render import (
    CELL_STYLE,
    MUTED,
    Column,
    Fetched,
    esc,
    rows_footer,
    text_table,
    value_html,
)

CHANGE = "__txsql_change"  # base name of the +/- column


def parse_diff_args(words: list[str]) -> tuple[str, int | None, int | None]:
    """Split ``t [v1 [v2]]`` (the table may be a quoted path with spaces).

    >>> parse_diff_args(["t", "1", "3"])
    ('t', 1, 3)
    >>> parse_diff_args(["delta.`/a", "b`", "2"])
    ('delta.`/a b`', 2, None)
    """
    versions: list[int] = []
    rest = list(words)
    while rest and len(versions) < 2 and rest[-1].isdigit():
        versions.insert(0, int(rest.pop()))
    if not rest:
        raise MagicUsageError(
            "diff needs a table", hint="e.g. %txsql diff orders 3 5  (rows added/removed 3 → 5)"
        )
    v1 = versions[0] if versions else None
    v2 = versions[1] if len(versions) > 1 else None
    return " ".join(rest), v1, v2


def version_diff(
    session: Any, table: str, v1: int | None, v2: int | None, limit: int | None
) -> DiffView:
    """Rows added and removed going from version ``v1`` to ``v2`` of ``table``.

    Args:
        session: the txsql Session.
        table: a table name or ``delta.`/path```.
        v1: the old version (default: the one before ``v2``).
        v2: the new version (default: the newest).
        limit: at most this many changed rows are fetched; None fetches all.
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
    from pyspark.sql import functions as F

    change = fresh_name(CHANGE, before.columns)  # a table column may be "__txsql_change"
    added = after.exceptAll(before).select(F.lit("+").alias(change), "*")
    removed = before.exceptAll(after).select(F.lit("-").alias(change), "*")
    changes = added.union(removed)  # same columns in the same order
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
    fetched = Fetched(columns, tuple(tuple(r)[1:] for r in shown), truncated)
    signs = tuple(str(r[0]) for r in shown)
    return DiffView(table, old, new, fetched, signs)


class DiffView:
    """The changed rows, each marked ``+`` (added) or ``-`` (removed)."""

    def __init__(self, table: str, old: int, new: int, fetched: Fetched, signs: tuple[str, ...]):
        self.table = table
        self.old = old
        self.new = new
        self.fetched = fetched
        self.signs = signs

    @property
    def added(self) -> list[tuple[Any, ...]]:
        return [r for s, r in zip(self.signs, self.fetched.rows) if s == "+"]

    @property
    def removed(self) -> list[tuple[Any, ...]]:
        return [r for s, r in zip(self.signs, self.fetched.rows) if s == "-"]

    def _title(self) -> str:
        return (
            f"{self.table}: v{self.old} → v{self.new} · "
            f"{len(self.added)} added, {len(self.removed)} removed"
            + (" (first rows only)" if self.fetched.truncated else "")
        )

    def _repr_html_(self) -> str:
        head = "".join(
            f'<th style="{CELL_STYLE};text-align:left">{esc(c.name)}<br>'
            f'<span style="{MUTED};font-weight:normal;font-size:11px">{esc(c.type)}</span></th>'
            for c in self.fetched.columns
        )
        body = []
        for sign, row in zip(self.signs, self.fetched.rows):
            color = "#2e7d32" if sign == "+" else "#c62828"
            mark = "+" if sign == "+" else "−"
            cells = "".join(value_html(v) for v in row)
            body.append(
                f'<tr><td style="{CELL_STYLE};color:{color};font-weight:600">{mark}</td>'
                f"{cells}</tr>"
            )
        footer = rows_footer(self.fetched, None, None)
        return (
            f'<div class="txsql-diff"><div style="font-size:12px">{esc(self._title())}</div>'
            f'<table style="border-collapse:collapse;font-size:12px"><thead><tr>'
            f'<th style="{CELL_STYLE}"></th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f'</table><div style="{MUTED};font-size:11px">{esc(footer)}</div></div>'
        )

    def __repr__(self) -> str:
        columns = (Column("±", ""), *self.fetched.columns)
        rows = [(s, *r) for s, r in zip(self.signs, self.fetched.rows)]
        return "\n".join([self._title(), text_table(columns, rows)])
