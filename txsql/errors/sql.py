"""Errors of the SQL front end and the notebook magic: parsing, planning, running a
statement and computing its values, the magic line, and the teaching scenarios."""

from __future__ import annotations

from txsql.errors.base import TxSqlError

# --- SQL front end and notebook magic -------------------------------------------------


class SqlError(TxSqlError):
    """A statement could not be parsed, planned or run."""

    def __init__(
        self,
        message: str,
        *,
        statement: str = "",
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.statement = statement
        self.line = line
        self.column = column
        super().__init__(message, hint=hint)


class SqlParseError(SqlError):
    """The SQL text is not valid."""

    default_hint = "Check the syntax near the position shown."


class ExpressionTooDeepError(SqlError):
    """An expression is nested too deeply to plan (e.g. thousands of parentheses)."""

    default_hint = (
        "Nest fewer levels (about 40 levels of parentheses parse): long OR/AND chains need "
        "no extra parentheses, and IN (...) lists many alternatives."
    )


class UnsupportedStatementError(SqlError):
    """Valid SQL that txsql does not run (yet)."""


class MergeCardinalityError(SqlError):
    """Several source rows match one target row that MERGE updates or deletes.

    [Delta: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]
    """

    default_hint = (
        "Deduplicate the source so each target row matches at most one source row (e.g. "
        "keep the latest row per key with ROW_NUMBER() OVER (PARTITION BY key ORDER BY ...) "
        "= 1), or make the ON condition more selective."
    )


class DataValueError(SqlError):
    """Spark could not compute a value the statement needs (ANSI SQL's data exceptions,
    SQLSTATE class 22): an invalid cast, a division by zero, an overflow...

    Raised while the statement runs or while its rows are fetched (``Result.collect()``,
    ``to_pandas()``, ``show()``, the magic); a write that fails this way commits nothing.
    ``spark_condition`` is Spark's error class (e.g. ``DIVIDE_BY_ZERO``).
    """

    spark_condition: str = ""
    default_hint = (
        "Fix the value or the expression (the try_ functions, e.g. try_cast, return NULL "
        "instead of failing); nothing was committed."
    )


class InvalidCastError(DataValueError):
    """A value cannot be converted to the type it is used as (Spark: CAST_INVALID_INPUT),
    e.g. the string 'abc' compared with a BIGINT column."""

    default_hint = (
        "Use a value of the column's type (id = 123, not id = 'abc'), or try_cast(value AS "
        "type) to get NULL for malformed input; nothing was committed."
    )


class ParameterTypeError(InvalidCastError):
    """A ``:name`` parameter's value does not fit the type the statement uses it as.

    ``parameter`` is its name (without the colon).
    """

    parameter: str = ""


class DivisionByZeroError(DataValueError):
    """A division or remainder by zero (Spark: DIVIDE_BY_ZERO, SQLSTATE 22012)."""

    default_hint = (
        "Guard the divisor (a / NULLIF(b, 0)) or use try_divide(a, b), which returns NULL "
        "for b = 0; nothing was committed."
    )


class ArithmeticOverflowError(DataValueError):
    """A number does not fit its type (Spark: ARITHMETIC_OVERFLOW, CAST_OVERFLOW,
    NUMERIC_VALUE_OUT_OF_RANGE, SQLSTATE 22003)."""

    default_hint = (
        "Compute in a wider type (CAST(x AS BIGINT) or DECIMAL(38, s)), or use try_add / "
        "try_multiply / try_cast to get NULL instead; nothing was committed."
    )


class MagicUsageError(TxSqlError):
    """The magic line itself is wrong (unknown option, bad value, missing variable)."""


class ScenarioError(TxSqlError):
    """A teaching scenario's step did not go as its interleaving requires."""

    default_hint = (
        "The scenario's table or session was changed while it ran, or txsql misbehaved: "
        "run it again on a fresh session; if it still fails, report it with the chained error."
    )
