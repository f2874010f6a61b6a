"""The conflict card: why a commit lost, shown when a CommitConflictError stops a cell.

It names both transactions, the winning version, the rule and isolation level that
decided it, what overlapped (partitions, files, rows) and how to avoid it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from txsql.errors import CommitConflictError
from txsql.magics.errors import conflict_lines, conflict_rows, shorten_files
from txsql.magics.render import MUTED, Column, esc, html_table, text_table

CARD_STYLE = (
    "border:1px solid var(--jp-error-color1,#c62828);border-left-width:4px;border-radius:4px;"
    "padding:6px 10px;margin:4px 0;font-size:12px;max-width:60em"
)
TITLE_STYLE = "color:var(--jp-error-color1,#c62828);font-weight:600;font-size:13px"


class ConflictCard:
    """Displayable explanation of a lost commit race.

    Args:
        error: the conflict the session raised.
        statement: our statement (the cell's failing statement).
        session: the named session it ran in, if any.
        read_version: the snapshot our transaction read, if known.
    """

    def __init__(
        self,
        error: CommitConflictError,
        *,
        statement: str = "",
        session: str | None = None,
        read_version: int | None = None,
    ) -> None:
        self.error = error
        self.statement = statement or error.statement
        self.session = session
        self.read_version = read_version if read_version is not None else _read_version(error)

    def ours(self) -> str:
        who = f"session {self.session}" if self.session else "this cell"
        read = f", read v{self.read_version}" if self.read_version is not None else ""
        return f"{who}{read}: {' '.join(self.statement.split())[:200]}"

    def theirs(self) -> str:
        e = self.error
        op = f" ({e.winning_operation})" if e.winning_operation else ""
        group = f" in transaction {e.winning_transaction}" if e.winning_transaction else ""
        return f"committed v{e.winning_version}{op}{group} first"

    def rows_table(self) -> tuple[list[Column], list[tuple[Any, ...]]] | None:
        """The colliding rows as a small table, whatever shape the checker reports.

        Row-level conflicts carry ``row_details`` (file, row position, key values at the
        winner's version); ``rows`` (path -> positions) is the fallback.
        """
        rows = _row_records(self.error)[:20]
        if not rows:
            return None
        if all(isinstance(r, Mapping) for r in rows):
            names = list(dict.fromkeys(k for r in rows for k in r))
            return [Column(str(n), "") for n in names], [
                tuple(_cell(n, r.get(n)) for n in names) for r in rows
            ]
        if all(isinstance(r, Sequence) and not isinstance(r, str) for r in rows):
            width = max(len(r) for r in rows)
            columns = [Column(f"c{i + 1}", "") for i in range(width)]
            return columns, [tuple(r) + (None,) * (width - len(r)) for r in rows]
        return [Column("row", "")], [(r,) for r in rows]

    def _repr_html_(self) -> str:
        e = self.error
        facts = [("your transaction", self.ours()), ("winning transaction", self.theirs())]
        if e.rule:
            facts.append(("rule", e.rule))
        if e.isolation_level:
            facts.append(("isolation level", e.isolation_level))
        if e.partitions:
            facts.append(("partitions", ", ".join(e.partitions)))
        rows_html = "".join(
            f'<tr><td style="{MUTED};padding:1px 8px 1px 0;vertical-align:top">{esc(k)}</td>'
            f"<td>{esc(v)}</td></tr>"
            for k, v in facts
        )
        if e.files:
            files = ", ".join(
                f'<code title="{esc(full)}">{esc(short)}</code>'
                for full, short in zip(e.files, shorten_files(e.files))
            )
            rows_html += (
                f'<tr><td style="{MUTED};padding:1px 8px 1px 0;vertical-align:top">files</td>'
                f"<td>{files}</td></tr>"
            )
        table = self.rows_table()
        collided = (
            f'<div style="margin-top:4px">colliding rows:</div>{html_table(*table)}'
            if table
            else ""
        )
        avoid = (
            f'<div style="margin-top:4px"><b>How to avoid:</b> {esc(e.hint)}</div>'
            if e.hint
            else ""
        )
        return (
            f'<div class="txsql-conflict" style="{CARD_STYLE}">'
            f'<div style="{TITLE_STYLE}">✘ commit conflict: {esc(type(e).__name__)}</div>'
            f"<div>{esc(e.message)}</div><table>{rows_html}</table>{collided}{avoid}</div>"
        )

    def __repr__(self) -> str:
        e = self.error
        lines = [
            f"✘ commit conflict: {type(e).__name__}: {e.message}",
            f"  your transaction: {self.ours()}",
            f"  winning transaction: {self.theirs()}",
        ]
        lines.extend(
            line for line in conflict_lines(e) if not line.startswith(("  winner:", "  rows:"))
        )
        table = self.rows_table()
        if table:
            lines.append(text_table(*table))
        if e.hint:
            lines.append(f"How to avoid: {e.hint}")
        return "\n".join(lines)


def _row_records(error: CommitConflictError) -> list[Any]:
    details = getattr(error, "row_details", None)
    if details:
        return list(details)
    rows = getattr(error, "rows", None)
    if isinstance(rows, Mapping):
        # path -> positions: one record per colliding row, without values.
        return [{"file": path, "row": r} for path, positions in rows.items() for r in positions]
    return conflict_rows(error)


def _cell(name: str, value: Any) -> Any:
    """Files are shown by base name (the full path is in the files line)."""
    if name == "file" and isinstance(value, str):
        return shorten_files([value])[0]
    return value


def _read_version(error: CommitConflictError) -> int | None:
    value = getattr(error, "read_version", None)
    return value if isinstance(value, int) else None
