"""Spark failures caused by a value, turned into typed txsql errors that say which value.

Two kinds, both recognised in the error's text (as :mod:`txsql.engine.failures` does, so
classic PySpark and Spark Connect behave the same):

- ANSI SQL data exceptions (SQLSTATE class 22): a string that is not a number, a division
  by zero, an overflow. Spark raises them while computing rows, so they surface where rows
  are computed: the write of a DML statement, or the fetch of a query's rows. A ``:name``
  parameter whose value caused one is named.
- A partition value whose directory name ``column=value`` is longer than a path component
  may be (Hadoop reports ``Mkdirs failed to create ...``, Java ``File name too long``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from txsql.errors import (
    ArithmeticOverflowError,
    DataValueError,
    DivisionByZeroError,
    InvalidCastError,
    ParameterTypeError,
    PartitionValueTooLongError,
    TxSqlError,
)

# "[DIVIDE_BY_ZERO] Division by zero. Use ... SQLSTATE: 22012": class, text, state. Also
# found inside a wrapper's text (TASK_WRITE_FAILED ... Caused by: ...[CAST_INVALID_INPUT]).
_SPARK_ERROR = re.compile(
    r"\[(?P<condition>[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] (?P<text>.*?) SQLSTATE: (?P<state>\w{5})"
)
_CAST_TEXT = re.compile(
    r'The value (?P<expression>.+) of the type "(?P<source>[^"]+)" cannot be cast to '
    r'"(?P<target>[^"]+)"'
)
# Spark's advice to switch ANSI mode off: txsql's writes rely on it, so it is not repeated.
_ANSI_ADVICE = re.compile(r'\s*If necessary set "?spark\.sql\.ansi\.enabled"?[^.]*\.')
_DIVISION = {"DIVIDE_BY_ZERO", "INTERVAL_DIVIDED_BY_ZERO", "REMAINDER_BY_ZERO"}
_OVERFLOW = {
    "ARITHMETIC_OVERFLOW",
    "BINARY_ARITHMETIC_OVERFLOW",
    "CAST_OVERFLOW",
    "CAST_OVERFLOW_IN_TABLE_INSERT",
    "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION",
    "NUMERIC_OUT_OF_SUPPORTED_RANGE",
    "NUMERIC_VALUE_OUT_OF_RANGE",
}
_CAST = {"CAST_INVALID_INPUT"}
# A directory Hadoop could not create, and the JVM's own words for a too-long name.
_MKDIRS = re.compile(r"Mkdirs failed to create (?P<path>.+?)(?: \(exists=|\n|$)")
_TOO_LONG = re.compile(r"(?P<path>\S+) \(File name too long\)")


def data_value_error(
    error: BaseException, statement: str, parameters: Mapping[str, Any]
) -> TxSqlError | None:
    """The typed error for a data exception (SQLSTATE class 22) in ``error``, or None.

    >>> e = data_value_error(Exception("[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012"),
    ...                      "SELECT 1/0", {})
    >>> type(e).__name__, e.message
    ('DivisionByZeroError', 'division by zero in `SELECT 1/0`')
    """
    where = " ".join(statement.split())[:80]
    found = _data_exception(error)
    if found is None:
        return _mismatched_parameter(str(error), parameters, where)
    condition, text, message_parameters = found
    error_type: type[DataValueError]
    if condition in _DIVISION:
        error_type, what = DivisionByZeroError, "division by zero"
    elif condition in _OVERFLOW:
        error_type, what = ArithmeticOverflowError, f"overflow: {_first_sentence(text)}"
    elif condition in _CAST:
        cast = _cast_parts(text, message_parameters)
        if cast is None:
            error_type, what = InvalidCastError, _first_sentence(text)
        else:
            value, source, target = cast
            named = _parameter_error(value, target, parameters, where)
            if named is not None:
                return named
            error_type = InvalidCastError
            what = f"the value {value} ({source}) cannot be cast to {target}"
    else:
        error_type, what = DataValueError, _first_sentence(text)
    typed = error_type(f"{what} in `{where}`")
    typed.spark_condition = condition
    return typed


def partition_too_long_error(text: str) -> PartitionValueTooLongError | None:
    """The partition column whose directory name is over the limit, if ``text`` says a
    directory could not be created because a ``column=value`` component is too long.

    >>> e = partition_too_long_error("Mkdirs failed to create file:/t/_s/p=" + "x" * 300)
    >>> e.partition_column, e.length
    ('p', 302)
    """
    for pattern in (_MKDIRS, _TOO_LONG):
        for match in pattern.finditer(text):
            found = _long_partition_component(match["path"])
            if found is not None:
                return found
    return None


def _long_partition_component(path: str) -> PartitionValueTooLongError | None:
    limit = PartitionValueTooLongError.LIMIT_BYTES
    for component in path.split("/"):
        length = len(component.encode("utf-8"))
        if length > limit and "=" in component:
            column, value = component.split("=", 1)
            # Spark escapes partition directory names Hive-style (%XX): name the column
            # as the user wrote it; the length is the escaped name's, what the file
            # system sees.
            return PartitionValueTooLongError(unquote(column), unquote(value)[:20], length)
    return None


def _data_exception(error: BaseException) -> tuple[str, str, dict[str, str]] | None:
    """(Spark error class, message text, message parameters) of the first SQLSTATE
    class 22 error in ``error`` or in the errors its text wraps."""
    parameters: dict[str, str] = {}
    try:
        state = error.getSqlState()  # type: ignore[attr-defined]
        condition = error.getCondition()  # type: ignore[attr-defined]
        if state and str(state).startswith("22") and condition:
            parameters = dict(error.getMessageParameters() or {})  # type: ignore[attr-defined]
    except Exception:
        pass  # not a PySpark error with an error class: read its text
    # raise_error's wrapper: txsql raises Spark's own conditions through it (fit_checked).
    text = str(error).replace("[USER_RAISED_EXCEPTION] ", "")
    for match in _SPARK_ERROR.finditer(text):
        if match["state"].startswith("22"):
            condition = match["condition"].split(".")[0]
            return condition, _ANSI_ADVICE.sub("", match["text"]), parameters
    return None


def _cast_parts(text: str, parameters: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(value as Spark shows it, source type, target type) of an invalid cast."""
    if {"expression", "sourceType", "targetType"} <= parameters.keys():
        return (
            parameters["expression"],
            parameters["sourceType"].strip('"'),
            parameters["targetType"].strip('"'),
        )
    match = _CAST_TEXT.search(text)
    if match is None:
        return None
    return match["expression"], match["source"], match["target"]


def _parameter_error(
    value: str, target: str, parameters: Mapping[str, Any], where: str
) -> ParameterTypeError | None:
    """A ParameterTypeError when the value that failed to cast is a parameter's value."""
    names = [n for n, v in parameters.items() if isinstance(v, str) and _spark_string(v) == value]
    if not names:
        return None
    shown = " or ".join(f":{n}" for n in names)
    error = ParameterTypeError(
        f"parameter {shown} = {value} (a Python str, bound as a STRING literal) cannot be "
        f"cast to {target}, the type it is used as in `{where}`",
        hint=f"Pass {shown} as a value of type {target} (e.g. an int for BIGINT, a "
        f"datetime.date for DATE), or cast it in the SQL with try_cast(:{names[0]} AS "
        f"{target}); nothing was committed.",
    )
    error.parameter = names[0]
    error.spark_condition = "CAST_INVALID_INPUT"
    return error


def _mismatched_parameter(
    text: str, parameters: Mapping[str, Any], where: str
) -> ParameterTypeError | None:
    """A ParameterTypeError when Spark refused a comparison or function call because of
    the type of a parameter's value (DATATYPE_MISMATCH naming that value)."""
    match = _SPARK_ERROR.search(text)
    if match is None or not match["condition"].startswith("DATATYPE_MISMATCH"):
        return None
    shown = _squeeze(match["text"])
    for name, value in parameters.items():
        # A bare number is too common a text to tell which value Spark means.
        rendered = _spark_literal(value) if isinstance(value, (str, list, tuple)) else None
        if rendered is not None and _squeeze(rendered) in shown:
            error = ParameterTypeError(
                f"parameter :{name} = {value!r} (a Python {type(value).__name__}) has a type "
                f"the statement cannot use there: {_first_sentence(match['text'])} in "
                f"`{where}`",
                hint=f"Pass :{name} as a value of the type the statement expects there (a "
                "list binds as an ARRAY, except in `x IN (:name)`), or cast it in the SQL; "
                "nothing was committed.",
            )
            error.parameter = name
            error.spark_condition = match["condition"]
            return error
    return None


def _spark_literal(value: Any) -> str | None:
    """How Spark shows a bound parameter's value in an expression, for the simple cases.

    >>> _spark_literal([1, "a"])
    "array(1, 'a')"
    """
    if isinstance(value, str):
        return _spark_string(value)
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        return None  # other literals are CASTs whose rendering Spark may normalise
    if isinstance(value, int):
        return str(value)
    items = [_spark_literal(v) for v in value]
    if any(i is None for i in items):
        return None
    return "array(" + ", ".join(i for i in items if i is not None) + ")"


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _spark_string(value: str) -> str:
    """A string as Spark quotes it in messages ('it''s' is shown as 'it\\'s').

    >>> _spark_string("it's")
    "'it\\\\'s'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _first_sentence(text: str) -> str:
    """Spark's message up to its first sentence end, without the trailing period.

    >>> _first_sentence("integer overflow. Use 'try_add' to tolerate overflow.")
    'integer overflow'
    """
    first = re.split(r"(?<=[a-z0-9)\"'])\. ", text.strip(), maxsplit=1)[0]
    return first.rstrip(".")
