"""A small predicate model shared by the planner and the transaction layer.

The planner converts WHERE / MERGE ON conditions into this model (anything it cannot model
becomes :class:`Opaque`); the transaction layer uses it to scope conflicts: partition
conjuncts are evaluated against ``partitionValues``, data conjuncts against per-file
min/max/nullCount stats. Evaluation is *conservative*: whenever a question cannot be
answered exactly the answer is "may match", never "cannot match", because a wrong "cannot
match" would let a conflicting commit through.

>>> p = and_(Comparison("=", Column("p"), Literal(1)), Comparison(">", Column("v"), Literal(3)))
>>> to_sql(p)
'p = 1 AND v > 3'
>>> [to_sql(part) for part in split_predicate(p, ["p"])]
['p = 1', 'v > 3', 'true']
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Union

LiteralValue = Union[None, bool, int, float, Decimal, str, dt.date, dt.datetime, bytes]
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
# Delta truncates string stats to this many characters (delta.dataSkippingStringPrefixLength).
STRING_PREFIX_LENGTH = 32


@dataclass(frozen=True)
class Column:
    """A top-level column by its logical name (matched case-insensitively)."""

    name: str


@dataclass(frozen=True)
class Literal:
    """A constant; ``Literal(None)`` is SQL NULL."""

    value: LiteralValue


Expr = Union[Column, Literal]


@dataclass(frozen=True)
class Comparison:
    """``left op right`` with ``op`` in ``= != < <= > >= <=>`` (``<=>`` is null-safe equal)."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))


@dataclass(frozen=True)
class Not:
    child: Predicate


@dataclass(frozen=True)
class IsNull:
    child: Expr


@dataclass(frozen=True)
class IsNotNull:
    child: Expr


@dataclass(frozen=True)
class In:
    """``child IN (values)``; plain Python values are wrapped in :class:`Literal`."""

    child: Expr
    values: tuple[Literal, ...]

    def __post_init__(self) -> None:
        wrapped = tuple(v if isinstance(v, Literal) else Literal(v) for v in self.values)
        object.__setattr__(self, "values", wrapped)


@dataclass(frozen=True)
class Opaque:
    """Anything Python cannot evaluate (LIKE, functions, subqueries), kept as SQL text.

    ``columns`` are the table columns it references; a non-deterministic expression
    (``rand()``, a subquery over the same table) makes conflict checks fall back to the
    file-level rule.
    """

    sql: str
    columns: frozenset[str] = frozenset()
    deterministic: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", frozenset(c.lower() for c in self.columns))


Predicate = Union[Literal, Comparison, And, Or, Not, IsNull, IsNotNull, In, Opaque]
TRUE = Literal(True)
FALSE = Literal(False)


# --- structure ----------------------------------------------------------------------------


def conjuncts(p: Predicate) -> list[Predicate]:
    """The top-level AND terms of ``p`` (``TRUE`` has none).

    >>> conjuncts(And((TRUE, And((Comparison("=", Column("a"), Literal(1)), FALSE)))))
    [Comparison(op='=', left=Column(name='a'), right=Literal(value=1)), Literal(value=False)]
    """
    if isinstance(p, And):
        return [c for child in p.children for c in conjuncts(child)]
    return [] if p == TRUE else [p]


def and_(*ps: Predicate) -> Predicate:
    """AND the predicates together, flattening and dropping ``TRUE``.

    >>> and_() == TRUE, and_(TRUE, FALSE) == FALSE
    (True, True)
    """
    terms = [c for p in ps for c in conjuncts(p)]
    if not terms:
        return TRUE
    return terms[0] if len(terms) == 1 else And(tuple(terms))


def _children(p: Predicate | Expr) -> Iterable[Predicate | Expr]:
    if isinstance(p, (And, Or)):
        return p.children
    if isinstance(p, Not):
        return (p.child,)
    if isinstance(p, Comparison):
        return (p.left, p.right)
    if isinstance(p, (IsNull, IsNotNull)):
        return (p.child,)
    if isinstance(p, In):
        return (p.child,)
    return ()


def referenced_columns(p: Predicate | Expr) -> frozenset[str]:
    """Lower-cased names of the columns ``p`` references.

    >>> sorted(referenced_columns(Or((IsNull(Column("A")), Opaque("b LIKE 'x%'", {"b"})))))
    ['a', 'b']
    """
    if isinstance(p, Column):
        return frozenset({p.name.lower()})
    if isinstance(p, Opaque):
        return p.columns
    out: set[str] = set()
    for child in _children(p):
        out |= referenced_columns(child)
    return frozenset(out)


def is_deterministic(p: Predicate | Expr) -> bool:
    """False when some :class:`Opaque` part is marked non-deterministic."""
    if isinstance(p, Opaque):
        return p.deterministic
    return all(is_deterministic(c) for c in _children(p))


def has_opaque(p: Predicate | Expr) -> bool:
    return isinstance(p, Opaque) or any(has_opaque(c) for c in _children(p))


def split_predicate(
    p: Predicate, partition_columns: Sequence[str]
) -> tuple[Predicate, Predicate, Predicate]:
    """Split ``p``'s conjuncts into (partition part, data part, rest).

    The partition part references only partition columns (or none: constants) and is
    deterministic; the data part references only data columns and can be checked against
    stats (no :class:`Opaque`); the rest is everything else (mixed, opaque or
    non-deterministic conjuncts). AND-ing the three gives back ``p``.

    >>> mixed = Or((Comparison("=", Column("p"), Literal(1)), Comparison(">", Column("y"), Literal(2))))
    >>> [to_sql(x) for x in split_predicate(mixed, ["P"])]
    ['true', 'true', 'p = 1 OR y > 2']
    """  # noqa: E501
    parts = {c.lower() for c in partition_columns}
    partition, data, rest = [], [], []
    for term in conjuncts(p):
        cols = referenced_columns(term)
        if not is_deterministic(term):
            rest.append(term)
        elif cols <= parts:
            partition.append(term)
        elif not (cols & parts) and not has_opaque(term):
            data.append(term)
        else:
            rest.append(term)
    return and_(*partition), and_(*data), and_(*rest)


# --- SQL text -----------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}


def _literal_sql(value: LiteralValue) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value!r}' AS DOUBLE)".replace("inf", "Infinity")
        return repr(value) + "D"
    if isinstance(value, Decimal):
        # Plain notation: Spark's ``BD`` suffix takes no exponent (``1E+2BD`` is invalid).
        return f"{value:f}BD"
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return f"TIMESTAMP_NTZ'{value.isoformat(sep=' ')}'"
        utc = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return f"TIMESTAMP'{utc.isoformat(sep=' ')}Z'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    escaped = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


# Words that read as something other than a column when unquoted (``null`` is the NULL
# literal, ``true`` a boolean): a column named like one must be quoted, or a row check
# evaluates a different predicate than the statement did.
_RESERVED = frozenset(
    [
        "all",
        "and",
        "any",
        "array",
        "as",
        "between",
        "both",
        "by",
        "case",
        "cast",
        "current_date",
        "current_time",
        "current_timestamp",
        "current_user",
        "date",
        "distinct",
        "else",
        "end",
        "except",
        "exists",
        "false",
        "from",
        "group",
        "having",
        "in",
        "inner",
        "interval",
        "is",
        "join",
        "leading",
        "like",
        "map",
        "not",
        "null",
        "on",
        "or",
        "order",
        "rlike",
        "select",
        "some",
        "struct",
        "table",
        "then",
        "timestamp",
        "timestamp_ntz",
        "to",
        "trailing",
        "true",
        "union",
        "unknown",
        "user",
        "when",
        "where",
    ]
)


def quote_column(name: str) -> str:
    """``name`` as a Spark SQL identifier, quoted unless plainly a column.

    >>> quote_column("id"), quote_column("null"), quote_column("my `col`")
    ('id', '`null`', '`my ``col```')
    """
    if _IDENT.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def _expr_sql(e: Expr) -> str:
    if isinstance(e, Column):
        return quote_column(e.name)
    return _literal_sql(e.value)


def to_sql(p: Predicate) -> str:
    """Spark SQL text for ``p`` (used in operationParameters and EXPLAIN).

    >>> to_sql(Not(Or((In(Column("my col"), (1, 2)), IsNull(Column("d"))))))
    'NOT (`my col` IN (1, 2) OR d IS NULL)'
    >>> to_sql(Comparison("<=>", Column("s"), Literal("it's")))
    "s <=> 'it\\\\'s'"
    """
    return _sql(p, 0)


def _sql(p: Predicate, parent: int) -> str:
    # Precedence: OR 1 < AND 2 < NOT 3 < atoms 4; parenthesize a looser child.
    if isinstance(p, Or):
        text, own = " OR ".join(_sql(c, 1) for c in p.children) or "false", 1
    elif isinstance(p, And):
        text, own = " AND ".join(_sql(c, 2) for c in p.children) or "true", 2
    elif isinstance(p, Not):
        text, own = f"NOT {_sql(p.child, 3)}", 3
    elif isinstance(p, Comparison):
        text, own = f"{_expr_sql(p.left)} {p.op} {_expr_sql(p.right)}", 4
    elif isinstance(p, IsNull):
        text, own = f"{_expr_sql(p.child)} IS NULL", 4
    elif isinstance(p, IsNotNull):
        text, own = f"{_expr_sql(p.child)} IS NOT NULL", 4
    elif isinstance(p, In):
        values = ", ".join(_literal_sql(v.value) for v in p.values)
        text, own = f"{_expr_sql(p.child)} IN ({values})", 4
    elif isinstance(p, Opaque):
        text, own = p.sql, 0 if not _IDENT.fullmatch(p.sql) else 4
    else:
        text, own = _literal_sql(p.value), 4
    return f"({text})" if own < parent or (own == 0 and parent > 0) else text
