"""Bind ``:name`` parameters as typed SQL literals (never spliced as text).

sqlglot parses ``:name`` as a placeholder only outside strings, comments and ``::`` casts,
so binding on the tree cannot inject SQL.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

from sqlglot import exp

from txsql.errors import SqlError


def parameter_names(expression: exp.Expr) -> list[str]:
    """Names of the ``:name`` placeholders in ``expression``, in order of appearance."""
    names: list[str] = []
    for node in expression.find_all(exp.Placeholder):
        name = node.name
        if name and name not in names:
            names.append(name)
    return names


def used_parameters(expression: exp.Expr, params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The ``(name, value)`` pairs of ``params`` that ``expression`` uses, in order.

    >>> import sqlglot
    >>> used_parameters(sqlglot.parse_one("SELECT :b, :a", read="spark"), {"a": 1, "b": 2, "c": 3})
    (('b', 2), ('a', 1))
    """
    return tuple((n, params[n]) for n in parameter_names(expression) if n in params)


def bind_parameters(expression: exp.Expr, params: Mapping[str, Any]) -> exp.Expr:
    """Return a copy of ``expression`` with every ``:name`` replaced by a literal.

    >>> import sqlglot
    >>> bind_parameters(sqlglot.parse_one("SELECT :a, :b", read="spark"), {"a": 1, "b": "x"}).sql()
    "SELECT 1, 'x'"
    """
    placeholders = list(expression.find_all(exp.Placeholder))
    if not placeholders:
        return expression
    if any(not p.name for p in placeholders):
        raise SqlError(
            "positional parameters (?) are not supported", hint="Use named ones: WHERE id = :id"
        )
    missing = sorted(n for n in parameter_names(expression) if n not in params)
    if missing:
        raise SqlError(
            f"no value for parameter(s) {', '.join(':' + n for n in missing)}",
            hint="Define them as notebook variables, or pass params={...}.",
        )
    bound = expression.copy()
    for node in list(bound.find_all(exp.Placeholder)):
        value = params[node.name]
        parent = node.parent
        if isinstance(value, (list, tuple)) and isinstance(parent, exp.In):
            # `x IN (:ids)` with a list means `x IN (1, 2, 3)`, not `x IN (ARRAY(1, 2, 3))`
            items: list[exp.Expr] = []
            for item in parent.expressions:
                if item is node:
                    items.extend(literal(v) for v in value)
                else:
                    items.append(item)
            parent.set("expressions", items)
        else:
            node.replace(literal(value))
    return bound


def literal(value: Any) -> exp.Expr:
    """A typed SQL literal for a Python value.

    >>> literal(dt.date(2026, 1, 31)).sql(dialect="spark")
    "CAST('2026-01-31' AS DATE)"
    """
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return exp.cast(exp.Literal.string(repr(value)), "DOUBLE")
    if isinstance(value, decimal.Decimal):
        digits = value.as_tuple()
        scale = max(0, -int(digits.exponent)) if isinstance(digits.exponent, int) else 0
        precision = max(len(digits.digits), scale, 1)
        return exp.cast(exp.Literal.string(str(value)), f"DECIMAL({min(precision, 38)}, {scale})")
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.datetime):
        text = value.isoformat(sep=" ")
        return exp.cast(exp.Literal.string(text), "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    if isinstance(value, bytes):
        return exp.HexString(this=value.hex())
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    raise SqlError(
        f"cannot use a {type(value).__name__} as a SQL parameter value",
        hint="Parameters take numbers, strings, dates, timestamps, bytes, lists or None.",
    )
