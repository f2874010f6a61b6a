"""Named transaction sessions: ``%%txsql --session T1`` with BEGIN … COMMIT across cells.

Each name holds one open transaction handle from ``Session.begin()``. BEGIN, COMMIT and
ROLLBACK in a session cell drive the handle; every other statement runs through
``handle.sql`` so it reads the pinned snapshot and the session's own staged writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from txsql.errors import CommitConflictError, TxSqlError
from txsql.magics.errors import MagicUsageError
from txsql.magics.render import Column, esc, html_table, text_table
from txsql.planner.sql.script import StatementText
from txsql.result import Result

_BEGIN = re.compile(r"^\s*(BEGIN|START)\b(\s+(TRANSACTION|WORK))?", re.IGNORECASE)
_COMMIT = re.compile(r"^\s*COMMIT(\s+(TRANSACTION|WORK))?\s*$", re.IGNORECASE)
_ROLLBACK = re.compile(r"^\s*(ROLLBACK|ABORT)(\s+(TRANSACTION|WORK))?\s*$", re.IGNORECASE)
_ISOLATION = re.compile(r"ISOLATION\s+LEVEL\s+([A-Za-z_ ]+?)\s*$", re.IGNORECASE)
_LEVELS = {
    "serializable": "Serializable",
    "writeserializable": "WriteSerializable",
    "write serializable": "WriteSerializable",
    "snapshot": "SnapshotIsolation",
    "snapshot isolation": "SnapshotIsolation",
    "snapshotisolation": "SnapshotIsolation",
}


def isolation_of(begin: str) -> str | None:
    """The isolation level named in a BEGIN statement, in Delta's spelling.

    >>> isolation_of("BEGIN TRANSACTION ISOLATION LEVEL write serializable")
    'WriteSerializable'
    >>> isolation_of("BEGIN") is None
    True
    """
    match = _ISOLATION.search(begin)
    if match is None:
        return None
    word = " ".join(match.group(1).split()).lower()
    if word not in _LEVELS:
        raise MagicUsageError(
            f"unknown isolation level {match.group(1)!r}",
            hint="Use SERIALIZABLE, WRITESERIALIZABLE or SNAPSHOT.",
        )
    return _LEVELS[word]


class NamedSessions:
    """The open named transactions of one notebook kernel."""

    def __init__(self) -> None:
        self.open: dict[str, Any] = {}

    def badge(self, name: str) -> str:
        """The badge of session ``name``: ``T1 · snapshot v3 · 1 staged write · Serializable``."""
        handle = self.open.get(name)
        if handle is None:
            return f"{name} · no open transaction"
        parts = [name]
        read_version = getattr(handle, "read_version", None)
        parts.append(f"snapshot v{read_version}" if read_version is not None else "no snapshot yet")
        if getattr(handle, "aborted", False):
            parts.append("aborted by an error: ROLLBACK to continue")
        summary = _staged(handle)
        if summary:
            parts.append(summary)
        isolation = _isolation(handle)
        if isolation:
            parts.append(isolation)
        return " · ".join(parts)

    def run(
        self,
        name: str,
        session: Any,
        statements: Sequence[StatementText],
        params: Mapping[str, Any],
    ) -> list[Result]:
        """Run a session cell's statements in order; positions in errors are cell positions."""
        results: list[Result] = []
        for statement in statements:
            try:
                results.append(self._run_one(name, session, statement, params))
            except TxSqlError as error:
                _shift(error, statement)
                if isinstance(error, CommitConflictError):
                    # a lost commit ends the transaction; the card shows what it had read
                    handle = self.open.pop(name, None)
                    if getattr(error, "read_version", None) is None and handle is not None:
                        error.read_version = getattr(handle, "read_version", None)  # type: ignore[attr-defined]
                raise
        return results

    def _run_one(
        self, name: str, session: Any, statement: StatementText, params: Mapping[str, Any]
    ) -> Result:
        text = statement.text
        if _BEGIN.match(text):
            if name in self.open:
                raise MagicUsageError(
                    f"session {name} already has an open transaction",
                    hint=f"COMMIT or ROLLBACK it first (%txsql --session {name} ROLLBACK).",
                )
            handle = session.begin(isolation=isolation_of(text))
            self.open[name] = handle
            level = _isolation(handle)
            return Result(text, "BEGIN", message=f"{name} began" + (f" ({level})" if level else ""))
        handle = self.open.get(name)
        if handle is None:
            raise MagicUsageError(
                f"session {name} has no open transaction",
                hint=f"Start one with BEGIN in a %%txsql --session {name} cell.",
            )
        if _COMMIT.match(text):
            result: Result = handle.commit()
            self.open.pop(name, None)
            return result
        if _ROLLBACK.match(text):
            handle.rollback()
            self.open.pop(name, None)
            return Result(text, "ROLLBACK", message=f"{name} rolled back; nothing was written")
        result = handle.sql(text, params)
        return result

    def view(self) -> SessionsView:
        rows = []
        for name, handle in self.open.items():
            rows.append(
                (name, getattr(handle, "read_version", None), _isolation(handle), _staged(handle))
            )
        return SessionsView(rows)


class SessionsView:
    """``%txsql sessions``: every open named session, its snapshot and staged writes."""

    COLUMNS = (
        Column("session", "string"),
        Column("read_version", "bigint"),
        Column("isolation", "string"),
        Column("staged", "string"),
    )

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<div>{esc('no open sessions')}</div>"
        return html_table(self.COLUMNS, self.rows)

    def __repr__(self) -> str:
        return text_table(self.COLUMNS, self.rows) if self.rows else "no open sessions"


def _staged(handle: Any) -> str:
    summary = getattr(handle, "staged_summary", None)
    try:
        return str(summary()) if callable(summary) else ""
    except Exception:
        return ""


def _isolation(handle: Any) -> str | None:
    level = getattr(handle, "isolation", None) or getattr(handle, "isolation_level", None)
    return None if level is None else str(getattr(level, "value", level))


def _shift(error: TxSqlError, statement: StatementText) -> None:
    """Turn a position inside one statement into a position in the whole cell."""
    if error.line is None:
        error.locate(statement.text, statement.line, statement.column)
        return
    if error.line == 1 and error.column is not None:
        error.column += statement.column - 1
    error.line += statement.line - 1
    error.statement = error.statement or statement.text
    error.args = (error._render(),)
