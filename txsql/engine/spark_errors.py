"""Spark errors in the user's terms: one typed txsql error per failure, Spark's own position
mapped onto the statement text, and PySpark's duplicate error log kept off the console
while txsql runs a statement.

:func:`statement_error` is the one mapping, used by the session (errors while planning or
writing), by :class:`~txsql.result.Result` (errors while fetching rows) and by the magic.

Spark reports where an analysis error is (``getQueryContext()``: the offending fragment
and its offsets) in the SQL *it* was given, which is txsql's rewrite of the statement
(tables resolved to snapshots, parameters bound). The fragment's text, not its offset, is
what survives the rewrite, so it is looked up in the statement the user wrote.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections.abc import Iterator, Mapping
from typing import Any

from txsql.engine.data_errors import data_value_error, partition_too_long_error
from txsql.engine.failures import typed_engine_error
from txsql.engine.readable_versions import vacuumed_version_error
from txsql.errors import (
    DataFileError,
    ParameterTypeError,
    SqlError,
    TxSqlError,
    VacuumedVersionError,
)

# PySpark logs every SQL error (a JSON record with the whole JVM stack) on these loggers
# when it builds the exception, before the caller can catch it.
_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("txsql_quiet", default=False)
_installed: set[str] = set()
# "…SQLSTATE: 42703; line 1 pos 11;" — a position in txsql's rewrite, not in the cell.
_SPARK_POSITION = re.compile(r";?\s*line \d+ pos \d+;?")


class _DropWhileQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET.get()


def _install_filters() -> None:
    if len(_installed) == len(_ERROR_LOGGERS):
        return
    try:
        # Deferred: %load_ext imports this module and must not wait for pyspark.
        from pyspark.logger import PySparkLogger
    except ImportError:  # older PySpark: no such loggers, nothing to silence
        _installed.update(_ERROR_LOGGERS)
        return
    for name in _ERROR_LOGGERS:
        if name not in _installed:
            # PySpark's own factory: a plain logging.Logger under that name would break
            # PySpark's logger.exception(..., errorClass=...) calls.
            PySparkLogger.getLogger(name).addFilter(_DropWhileQuiet())
            _installed.add(name)


@contextlib.contextmanager
def quiet_spark_errors() -> Iterator[None]:
    """Drop PySpark's log record of a SQL error raised in this block (the error itself is
    raised and reported by txsql). Per thread and task: other code still logs."""
    _install_filters()
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def statement_error(
    error: BaseException,
    statement: str,
    line: int = 1,
    column: int = 1,
    *,
    parameters: Mapping[str, Any] | None = None,
    read_version: int | None = None,
    fetching: bool = False,
) -> TxSqlError:
    """The typed txsql error for ``error``, raised while running ``statement`` (which
    starts at ``line``/``column`` of its cell or script) or while fetching its rows.

    Known causes get their own type: a damaged DV or data file, a time-travel read of a
    version VACUUM emptied, a data value Spark cannot compute (ANSI casts, division by
    zero, overflow; a ``:name`` parameter of the wrong type), a partition directory name
    too long for the file system. Anything else is a :class:`SqlError` carrying Spark's
    first message line at the position Spark blames.

    Args:
        parameters: the ``:name`` values bound into the statement (to name a bad one).
        read_version: the version a single-table query read (named for a vacuumed one).
        fetching: the rows were being fetched (nothing was committed), not the statement run.
    """
    typed = partition_too_long_error(str(error)) or typed_engine_error(error)
    if isinstance(typed, DataFileError) and not isinstance(typed, VacuumedVersionError):
        typed = vacuumed_version_error(typed, read_version) or typed
    if typed is not None:
        typed.locate(statement, line, column)
        return typed
    at_line, at_column = position_in_script(error, statement, line, column)
    valued = data_value_error(error, statement, parameters or {})
    if valued is not None:
        if isinstance(valued, ParameterTypeError):  # Spark blames the value, not `:name`
            offset = find_fragment(statement, f":{valued.parameter}")
            at_line, at_column = _in_script(_line_column(statement, offset), line, column)
        valued.locate(statement, at_line, at_column)
        return valued
    first = spark_error_message(error)
    hint = ""
    if "COLUMN_IS_NOT_VARIANT_TYPE" in str(error):  # Spark 4.1 lacks the message text
        first = "the `col:path` syntax reads VARIANT columns only, and this column is not one"
        hint = " For JSON text use get_json_object(col, '$.path') or parse_json(col):path."
    if "NOT NULL constraint violated" in str(error):
        detail = str(error).split("NOT NULL constraint violated", 1)[1].splitlines()[0]
        first = "NOT NULL constraint violated" + detail.split(".")[0]
    unchanged = (
        "nothing was committed by reading its rows" if fetching else "the table is unchanged"
    )
    return SqlError(
        f"{first} in `{shorten(statement)}`",
        statement=statement,
        line=at_line,
        column=at_column,
        hint=f"Fix the statement; {unchanged}.{hint}",
    )


def shorten(statement: str, limit: int = 80) -> str:
    """The statement on one line, cut to ``limit`` characters (for messages).

    >>> shorten("SELECT *\\n  FROM t", 10)
    'SELECT * F'
    """
    return " ".join(statement.split())[:limit]


def spark_error_message(error: BaseException) -> str:
    """Spark's first message line without its position in the rewritten SQL.

    >>> spark_error_message(Exception("[X] bad `a`. SQLSTATE: 42703; line 1 pos 11;\\nplan"))
    '[X] bad `a`. SQLSTATE: 42703'
    """
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return _SPARK_POSITION.sub("", first).rstrip()


def spark_error_position(error: BaseException, statement: str) -> tuple[int, int] | None:
    """1-based (line, column) in ``statement`` of the fragment Spark blames, if found."""
    fragment = _fragment(error)
    if not fragment:
        return None
    return _line_column(statement, find_fragment(statement, fragment))


def _line_column(statement: str, offset: int | None) -> tuple[int, int] | None:
    if offset is None:
        return None
    line = statement.count("\n", 0, offset) + 1
    column = offset - (statement.rfind("\n", 0, offset) + 1) + 1
    return line, column


def position_in_script(
    error: BaseException, statement: str, line: int, column: int
) -> tuple[int, int]:
    """Where Spark's error is in the script, given where ``statement`` starts in it.

    >>> class E(Exception):
    ...     def getQueryContext(self):
    ...         return [type("C", (), {"fragment": lambda self: "nope"})()]
    >>> position_in_script(E(), "SELECT id,\\n  nope FROM t", 3, 5)
    (4, 3)
    >>> position_in_script(ValueError("x"), "SELECT 1", 3, 5)
    (3, 5)
    """
    return _in_script(spark_error_position(error, statement), line, column)


def _in_script(found: tuple[int, int] | None, line: int, column: int) -> tuple[int, int]:
    """A (line, column) inside a statement moved to the script the statement starts in."""
    if found is None:
        return line, column
    at_line, at_column = found
    if at_line == 1:
        return line, column + at_column - 1
    return line + at_line - 1, at_column


def find_fragment(statement: str, fragment: str) -> int | None:
    """Offset of ``fragment`` in ``statement``: case-insensitive (Spark upper-cases
    function names), spacing-insensitive, starting on a word boundary.

    >>> find_fragment("select x,\\n  frob( id ) from t", "FROB(id)")
    12
    >>> find_fragment("select nope2, nope from t", "nope")
    14
    """
    parts = [re.escape(p) for p in re.split(r"\s+", fragment.strip()) if p]
    if not parts:
        return None
    # Tokens may be joined by any spacing, or none ("FROB(id)" vs "frob( id )").
    body = r"\s*".join(_loosen(p) for p in parts)
    match = re.search(r"(?<![\w`])" + body + r"(?![\w`])", statement, re.IGNORECASE)
    if match is None:
        match = re.search(body, statement, re.IGNORECASE)
    return match.start() if match else None


def _loosen(part: str) -> str:
    # allow spaces around punctuation inside one fragment word: "(id)" matches "( id )"
    return re.sub(r"(\\[(),])", r"\\s*\1\\s*", part)


def _fragment(error: BaseException) -> str | None:
    contexts: Any
    try:
        contexts = error.getQueryContext()  # type: ignore[attr-defined]
    except Exception:
        return None
    for context in contexts or ():
        try:
            fragment = context.fragment()
        except Exception:
            continue
        if fragment:
            return str(fragment)
    return None
