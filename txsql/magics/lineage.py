"""``%txsql lineage t [WHERE predicate]``: the history of rows, one line per change.

An HTML table in a notebook, plain text in a terminal; each line names the version, its
time and operation, and the row before and after (``inserted`` where it began).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from txsql.magics.errors import MagicUsageError
from txsql.magics.render import Column, html_table, text_table

if TYPE_CHECKING:
    import pandas as pd

    from txsql.session import Session

_COLUMNS = (
    Column("row_id", "bigint"),
    Column("version", "bigint"),
    Column("timestamp", "timestamp"),
    Column("operation", "string"),
    Column("before", ""),
    Column("after", ""),
)


def lineage_view(session: Session, args: list[str]) -> LineageView:
    """Parse ``t [WHERE predicate]`` and build the view."""
    words = list(args)
    where_at = next((i for i, w in enumerate(words) if w.upper() == "WHERE"), len(words))
    table = " ".join(words[:where_at])
    predicate = " ".join(words[where_at + 1 :]) or None
    if not table or (where_at < len(words) and predicate is None):
        raise MagicUsageError(
            "lineage needs a table and optionally WHERE <predicate>",
            hint="e.g. %txsql lineage orders WHERE id = 7",
        )
    return LineageView(table, session.table(table).lineage(predicate))


class LineageView:
    """The lineage lines of one table, rendered for the front end showing them."""

    def __init__(self, table: str, lines: pd.DataFrame) -> None:
        self.table = table
        self.lines = lines

    def _rows(self) -> list[list[Any]]:
        return [
            [
                r.row_id,
                r.version,
                r.timestamp,
                r.operation,
                _row(r.before, "inserted"),
                _row(r.after, ""),
            ]
            for r in self.lines.itertuples(index=False)
        ]

    def _repr_html_(self) -> str:
        if self.lines.empty:
            return f"<p>no rows of {self.table} match</p>"
        return html_table(_COLUMNS, self._rows())

    def __repr__(self) -> str:
        if self.lines.empty:
            return f"no rows of {self.table} match"
        return text_table(_COLUMNS, self._rows())


def _row(values: dict[str, Any] | None, missing: str) -> str:
    if values is None:
        return missing
    return ", ".join(f"{k}={v!r}" for k, v in values.items())
