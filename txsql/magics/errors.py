"""Errors of the magic: short, traceback-free cell failures that point at the cell line.

A failing statement must stop the cell (so "Run All" stops too) but a user error is not a
bug, so its Python traceback is noise. IPython prints what an exception's
``_render_traceback_`` returns instead of a traceback; the error keeps its original type so
``except CommitConflictError`` around a magic still works.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from txsql.engine.spark_errors import (
    quiet_spark_errors,
)
from txsql.errors import CommitConflictError, SqlParseError, TxSqlError
from txsql.errors import MagicUsageError as MagicUsageError  # re-exported (defined there)
from txsql.magics.source import SqlSource

_RED = "\x1b[1;31m"
_RESET = "\x1b[0m"


class CellErrorMixin:
    """Gives an exception IPython's short rendering (no Python traceback)."""

    rendered: list[str]

    def _render_traceback_(self) -> list[str]:
        return self.rendered


_CELL_CLASSES: dict[type[TxSqlError], type[TxSqlError]] = {}


def _cell_class(base: type[TxSqlError]) -> type[TxSqlError]:
    cls = _CELL_CLASSES.get(base)
    if cls is None:
        # Same name and module as the original, so the error reads as e.g. "SqlParseError".
        namespace = {"__module__": base.__module__, "__qualname__": base.__qualname__}
        cls = type(base.__name__, (CellErrorMixin, base), namespace)
        _CELL_CLASSES[base] = cls
    return cls


def as_cell_error(error: TxSqlError, lines: Sequence[str]) -> TxSqlError:
    """A copy of ``error`` (same type, same attributes) that renders as ``lines``."""
    cls = _cell_class(type(error))
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(error.__dict__)
    wrapped.args = error.args
    wrapped.rendered = list(lines)  # type: ignore[attr-defined]
    return wrapped


@contextlib.contextmanager
def quiet_spark_error_logs() -> Iterator[None]:
    """Silence PySpark's JSON dump of every SQL error while a magic runs.

    PySpark logs each analysis error with its full JVM stack to stderr before raising it;
    the magic already shows the message at the cell line, so the dump is only noise.
    """
    with quiet_spark_errors():
        yield


def error_lines(
    error: TxSqlError,
    source: SqlSource | None = None,
    *,
    statements: Sequence[str] = (),
    conflict_card_shown: bool = False,
) -> list[str]:
    """The short text a failed cell shows: type, message, cell position, caret, hint.

    Args:
        error: the error the session raised (positions relative to ``source.text``).
        source: where the SQL came from; None for errors not tied to SQL text.
        statements: the cell's statement texts, to say which one failed.
        conflict_card_shown: the HTML conflict card was displayed above, so keep it short.
    """
    name = type(error).__name__
    lines = [f"{_RED}{name}{_RESET}: {error.message}"]
    if source is not None and error.line is not None:
        where = source.where(error.line, error.column)
        index = _statement_index(error, statements)
        prefix = (
            f"statement {index} of {len(statements)}, " if index and len(statements) > 1 else ""
        )
        lines.append(f"  at {prefix}{where}:")
        lines.extend(source.excerpt(error.line, error.column))
        if index and index > 1 and not isinstance(error, SqlParseError):
            # the session runs statements in order and autocommits each, so say what stands
            lines.append(f"  Statements 1-{index - 1} ran before it; any commits they made stand.")
    if conflict_card_shown:
        lines.append("  (see the conflict card above)")
    elif isinstance(error, CommitConflictError):
        lines.extend(conflict_lines(error))
    if error.hint:
        label = "How to avoid" if isinstance(error, CommitConflictError) else "How to fix"
        lines.append(f"{label}: {error.hint}")
    return lines


def conflict_lines(error: CommitConflictError) -> list[str]:
    """The conflict details as indented text lines (the card's plain-text form)."""
    won = f"v{error.winning_version}"
    if error.winning_operation:
        won += f" ({error.winning_operation})"
    if error.winning_transaction:
        won += f", transaction {error.winning_transaction}"
    lines = [f"  winner: {won}"]
    if error.rule:
        lines.append(f"  rule: {error.rule}")
    if error.isolation_level:
        lines.append(f"  isolation level: {error.isolation_level}")
    if error.partitions:
        lines.append(f"  partitions: {', '.join(error.partitions)}")
    if error.files:
        lines.append(f"  files: {', '.join(shorten_files(error.files))}")
    rows = conflict_rows(error)
    if rows:
        lines.append(f"  rows: {'; '.join(str(r) for r in rows[:5])}")
    return lines


def conflict_rows(error: CommitConflictError) -> list[Any]:
    """The colliding rows, if the checker reported them (a newer error attribute)."""
    rows = getattr(error, "rows", None) or ()
    return list(rows)


def shorten_files(files: Sequence[str], keep: int = 5) -> list[str]:
    """Base names of the first ``keep`` files, plus how many more there are.

    >>> shorten_files(["/t/a.parquet", "/t/p=1/b.parquet"], keep=1)
    ['a.parquet', '(+1 more)']
    """
    names = [f.rstrip("/").rsplit("/", 1)[-1] for f in files[:keep]]
    if len(files) > keep:
        names.append(f"(+{len(files) - keep} more)")
    return names


def _statement_index(error: TxSqlError, statements: Sequence[str]) -> int | None:
    if not statements:
        return None
    target = " ".join((error.statement or "").split())
    for i, text in enumerate(statements, 1):
        if target and " ".join(text.split()) == target:
            return i
    return None
