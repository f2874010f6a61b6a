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
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Union

from txsql.errors import SchemaError
from txsql.log.actions import AddFile
from txsql.log.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
    parse_partition_value,
    physical_name,
)

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
_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}


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
        return f"{value}BD"
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


def _expr_sql(e: Expr) -> str:
    if isinstance(e, Column):
        return e.name if _IDENT.fullmatch(e.name) else "`" + e.name.replace("`", "``") + "`"
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


# --- typing values ------------------------------------------------------------------------


class _Undecidable(Exception):
    """Raised internally when a value cannot be typed or compared exactly."""


def _coerce(value: LiteralValue, dtype: DataType) -> Any:
    """``value`` as a Python value comparable with values of a ``dtype`` column."""
    if value is None:
        return None
    if isinstance(dtype, DecimalType):
        if isinstance(value, bool):
            raise _Undecidable
        if isinstance(value, (int, Decimal)):
            return Decimal(value)
        if isinstance(value, (float, str)):
            try:
                return Decimal(str(value).strip())
            except ArithmeticError:
                raise _Undecidable from None
        raise _Undecidable
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name in ("long", "integer", "short", "byte", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
            raise _Undecidable
        if isinstance(value, str):
            try:
                return float(value) if name in ("float", "double") else Decimal(value.strip())
            except ArithmeticError:
                raise _Undecidable from None
            except ValueError:
                raise _Undecidable from None
        if isinstance(value, float) and math.isnan(value):
            raise _Undecidable  # Spark orders NaN above everything; Python does not
        return float(value) if name in ("float", "double") else value
    if name == "string" or name.startswith("string collate"):
        # A non-string literal makes Spark cast the column, which changes the comparison.
        if isinstance(value, str) and not name.startswith("string collate"):
            return value
        raise _Undecidable
    if name == "boolean" and isinstance(value, bool):
        return value
    if name == "date":
        if isinstance(value, dt.datetime):
            raise _Undecidable
        if isinstance(value, dt.date):
            return value
    if name in ("timestamp", "timestamp_ntz"):
        if isinstance(value, dt.datetime):
            if name == "timestamp_ntz":
                if value.tzinfo is not None:
                    raise _Undecidable
                return value
            # Naive timestamp literals are session-local time; txsql sessions run in UTC.
            aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            return aware.astimezone(dt.timezone.utc)
        if isinstance(value, dt.date):
            midnight = dt.datetime(value.year, value.month, value.day)
            return midnight if name == "timestamp_ntz" else midnight.replace(tzinfo=dt.timezone.utc)
    if name == "binary" and isinstance(value, bytes):
        return value
    if isinstance(value, str) and name in ("date", "timestamp", "timestamp_ntz", "boolean"):
        try:
            return parse_partition_value(value, dtype)
        except SchemaError:
            raise _Undecidable from None
    raise _Undecidable


def _stat_value(raw: Any, dtype: DataType) -> Any:
    """A min/max stats value (JSON scalar) typed like the column, or None if unusable."""
    if raw is None or isinstance(raw, (dict, list)):
        return None
    try:
        if isinstance(dtype, DecimalType):
            return Decimal(str(raw))
        name = dtype.name if isinstance(dtype, PrimitiveType) else ""
        if name in ("long", "integer", "short", "byte"):
            return int(raw) if isinstance(raw, int) and not isinstance(raw, bool) else None
        if name in ("float", "double"):
            number = float(raw)
            return None if math.isnan(number) else number
        if name == "string":
            return raw if isinstance(raw, str) else None
        if name in ("date", "timestamp", "timestamp_ntz", "boolean") and isinstance(raw, str):
            return parse_partition_value(raw, dtype)
        if name == "boolean" and isinstance(raw, bool):
            return raw
    except (ValueError, ArithmeticError, SchemaError):
        return None
    return None


def _compare(op: str, a: Any, b: Any) -> bool:
    try:
        if op in ("=", "<=>"):
            return bool(a == b)
        if op == "!=":
            return bool(a != b)
        if op == "<":
            return bool(a < b)
        if op == "<=":
            return bool(a <= b)
        if op == ">":
            return bool(a > b)
        return bool(a >= b)
    except TypeError:
        raise _Undecidable from None


# --- three-valued evaluation on partition values ------------------------------------------

Lookup = Callable[[str], tuple[Any, DataType]]


def _kleene(p: Predicate, lookup: Lookup) -> bool | None:
    if isinstance(p, And):
        results = [_kleene(c, lookup) for c in p.children]
        return False if False in results else (None if None in results else True)
    if isinstance(p, Or):
        results = [_kleene(c, lookup) for c in p.children]
        return True if True in results else (None if None in results else False)
    if isinstance(p, Not):
        inner = _kleene(p.child, lookup)
        return None if inner is None else not inner
    try:
        return _kleene_atom(p, lookup)
    except _Undecidable:
        return None


def _value(e: Expr, other: Expr, lookup: Lookup) -> Any:
    """The typed value of ``e``; a literal is typed like the column on the other side."""
    if isinstance(e, Column):
        return lookup(e.name)[0]
    if isinstance(other, Column):
        return _coerce(e.value, lookup(other.name)[1])
    return e.value


def _kleene_atom(p: Predicate, lookup: Lookup) -> bool | None:
    if isinstance(p, Literal):
        return None if p.value is None else bool(p.value)
    if isinstance(p, Opaque):
        return None
    if isinstance(p, (IsNull, IsNotNull)):
        value = _value(p.child, p.child, lookup)
        return (value is None) == isinstance(p, IsNull)
    if isinstance(p, In):
        value = _value(p.child, p.child, lookup)
        if value is None:
            return None
        typed = [_value(v, p.child, lookup) for v in p.values]
        if any(t is not None and _compare("=", value, t) for t in typed):
            return True
        return None if any(t is None for t in typed) else False
    assert isinstance(p, Comparison)
    left = _value(p.left, p.right, lookup)
    right = _value(p.right, p.left, lookup)
    if p.op == "<=>":
        if left is None or right is None:
            return left is None and right is None
        return _compare("=", left, right)
    if left is None or right is None:
        return None
    return _compare(p.op, left, right)


def _field_type(schema: StructType, name: str) -> tuple[str, DataType]:
    try:
        f = schema.field(name)
    except SchemaError:
        raise _Undecidable from None
    return f.name, f.type


def eval_partition(
    p: Predicate,
    partition_values: Mapping[str, str | None],
    schema: StructType,
    partition_columns: Sequence[str],
    column_mapping_mode: str = "none",
) -> bool | None:
    """Evaluate ``p`` for a file's partition in SQL three-valued logic.

    ``None`` means unknown: SQL NULL, or not decidable from partition values (a data
    column, an :class:`Opaque`, a literal that cannot be typed like the column). Callers
    treat ``None`` as "may match".

    >>> from txsql.log.schema import parse_schema
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"p","type":"integer",'
    ...     '"nullable":true,"metadata":{}},{"name":"v","type":"long","nullable":true,"metadata":{}}]}')
    >>> eval_partition(Comparison(">=", Column("P"), Literal(2)), {"p": "3"}, s, ["p"])
    True
    >>> eval_partition(Or((Comparison("=", Column("p"), Literal(1)), Comparison("=", Column("v"), Literal(1)))), {"p": "3"}, s, ["p"]) is None
    True
    >>> eval_partition(Comparison("=", Column("p"), Literal(1)), {"p": None}, s, ["p"]) is None
    True
    """  # noqa: E501
    parts = {c.lower() for c in partition_columns}

    def lookup(name: str) -> tuple[Any, DataType]:
        if name.lower() not in parts:
            raise _Undecidable
        logical, dtype = _field_type(schema, name)
        key = physical_name(schema.field(logical), column_mapping_mode)
        if key in partition_values:
            text = partition_values[key]
        elif logical in partition_values:
            text = partition_values[logical]
        else:
            raise _Undecidable
        try:
            return parse_partition_value(text, dtype), dtype
        except SchemaError:
            raise _Undecidable from None

    return _kleene(p, lookup)


# --- "may some row match" on partition values + stats -------------------------------------


@dataclass(frozen=True)
class _Range:
    """What a file tells us about one column: bounds on its non-null values, nullness."""

    dtype: DataType
    lo: Any = None  # None: unbounded
    hi: Any = None
    may_null: bool = True
    may_value: bool = True


def _may_true(p: Predicate, col: Callable[[str], _Range]) -> bool:
    """Could some row make ``p`` TRUE?"""
    if isinstance(p, And):
        return all(_may_true(c, col) for c in p.children)
    if isinstance(p, Or):
        return any(_may_true(c, col) for c in p.children)
    if isinstance(p, Not):
        return _may_false(p.child, col)
    try:
        return _atom_may(p, col, want=True)
    except _Undecidable:
        return True


def _may_false(p: Predicate, col: Callable[[str], _Range]) -> bool:
    """Could some row make ``p`` FALSE (not NULL)?"""
    if isinstance(p, And):
        return any(_may_false(c, col) for c in p.children)
    if isinstance(p, Or):
        return all(_may_false(c, col) for c in p.children)
    if isinstance(p, Not):
        return _may_true(p.child, col)
    try:
        return _atom_may(p, col, want=False)
    except _Undecidable:
        return True


def _bound_may(op: str, r: _Range, v: Any) -> bool:
    """Could a non-null value x in [r.lo, r.hi] satisfy ``x op v``?"""
    lo_ok = r.lo is not None
    hi_ok = r.hi is not None
    if op == "=":
        return not (lo_ok and _compare("<", v, r.lo)) and not (hi_ok and _compare(">", v, r.hi))
    if op == "!=":
        return not (lo_ok and hi_ok and _compare("=", r.lo, r.hi) and _compare("=", r.lo, v))
    if op == "<":
        return not lo_ok or _compare("<", r.lo, v)
    if op == "<=":
        return not lo_ok or _compare("<=", r.lo, v)
    if op == ">":
        return not hi_ok or _compare(">", r.hi, v)
    return not hi_ok or _compare(">=", r.hi, v)


def _atom_may(p: Predicate, col: Callable[[str], _Range], want: bool) -> bool:
    if isinstance(p, Literal):
        return p.value is not None and bool(p.value) == want
    if isinstance(p, Opaque):
        return True
    if isinstance(p, (IsNull, IsNotNull)):
        if isinstance(p.child, Literal):
            return (p.child.value is None) == isinstance(p, IsNull) == want
        r = col(p.child.name)
        null_side = isinstance(p, IsNull) == want
        return r.may_null if null_side else r.may_value
    if isinstance(p, In):
        if isinstance(p.child, Literal):
            raise _Undecidable
        r = col(p.child.name)
        if not r.may_value:
            return False
        values = [_coerce(v.value, r.dtype) for v in p.values]
        if want:
            return any(v is not None and _bound_may("=", r, v) for v in values)
        if any(v is None for v in values):
            return False  # x NOT IN a list with NULL is never FALSE: it is NULL or TRUE
        return all(_bound_may("!=", r, v) for v in values)
    assert isinstance(p, Comparison)
    left, right, op = p.left, p.right, p.op
    if isinstance(left, Literal) and isinstance(right, Column):
        left, right, op = right, left, _FLIPPED[op]
    if not (isinstance(left, Column) and isinstance(right, Literal)):
        raise _Undecidable  # column vs column, or constants: not worth modelling
    r = col(left.name)
    value = _coerce(right.value, r.dtype)
    if op == "<=>":
        if value is None:
            return r.may_null if want else r.may_value
        if want:
            return r.may_value and _bound_may("=", r, value)
        return r.may_null or (r.may_value and _bound_may("!=", r, value))
    if value is None or not r.may_value:
        return False  # a comparison with NULL is NULL, neither TRUE nor FALSE
    return _bound_may(op if want else _NEGATED[op], r, value)


def _parse_stats(add: AddFile) -> dict[str, Any] | None:
    if not add.stats:
        return None
    try:
        stats = json.loads(add.stats)
    except ValueError:
        return None
    return stats if isinstance(stats, dict) else None


def may_match_file(
    p: Predicate,
    add: AddFile,
    schema: StructType,
    partition_columns: Sequence[str],
    column_mapping_mode: str = "none",
) -> bool:
    """False only when provably no row of ``add`` satisfies ``p``.

    Partition columns are exact (from ``partitionValues``); data columns use the file's
    min/max/nullCount stats, keyed by physical name. Missing stats never skip; with
    ``tightBounds: false`` min/max remain bounds but null counts are not trusted; string
    maxima of 32+ characters may be truncated and are ignored; timestamp maxima are
    truncated to milliseconds and are widened by 1 ms.

    >>> from txsql.log.schema import parse_schema
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"v","type":"long",'
    ...     '"nullable":true,"metadata":{}}]}')
    >>> f = AddFile("a", {}, 1, 1, stats='{"numRecords":2,"minValues":{"v":1},'
    ...     '"maxValues":{"v":5},"nullCount":{"v":0}}')
    >>> may_match_file(Comparison(">", Column("v"), Literal(5)), f, s, [])
    False
    >>> may_match_file(Comparison("<=", Literal(5), Column("v")), f, s, [])
    True
    """
    parts = {c.lower() for c in partition_columns}
    stats = _parse_stats(add)
    tight = True
    if stats is not None:
        tight = stats.get("tightBounds", True) is not False
        num = stats.get("numRecords")
        if isinstance(num, int):
            deleted = add.deletion_vector.cardinality if add.deletion_vector else 0
            if num - deleted <= 0:
                return False  # no live rows at all

    def column_range(name: str) -> _Range:
        logical, dtype = _field_type(schema, name)
        key = physical_name(schema.field(logical), column_mapping_mode)
        if logical.lower() in parts:
            values = add.partition_values
            text = values.get(key, values.get(logical)) if values else None
            if key not in values and logical not in values:
                return _Range(dtype)
            try:
                value = parse_partition_value(text, dtype)
            except SchemaError:
                return _Range(dtype)
            return _Range(dtype, value, value, value is None, value is not None)
        if stats is None:
            return _Range(dtype)
        return _stats_range(stats, key, dtype, tight)

    return _may_true(p, column_range)


def _stats_range(stats: Mapping[str, Any], key: str, dtype: DataType, tight: bool) -> _Range:
    def get(section: str) -> Any:
        values = stats.get(section)
        return values.get(key) if isinstance(values, dict) else None

    lo = _stat_value(get("minValues"), dtype)
    hi = _stat_value(get("maxValues"), dtype)
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name == "string" and isinstance(hi, str) and len(hi) >= STRING_PREFIX_LENGTH:
        hi = None  # possibly a truncated prefix (+ tie-breaker): not a safe upper bound
    if name in ("timestamp", "timestamp_ntz") and isinstance(hi, dt.datetime):
        hi = hi + dt.timedelta(milliseconds=1)  # stats keep milliseconds, rows microseconds
    nulls = get("nullCount")
    num = stats.get("numRecords")
    known = tight and isinstance(nulls, int) and not isinstance(nulls, bool)
    may_null = not known or nulls > 0
    may_value = not (known and isinstance(num, int) and nulls >= num)
    return _Range(dtype, lo, hi, may_null, may_value)
