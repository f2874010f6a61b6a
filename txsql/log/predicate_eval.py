"""Evaluating predicates on file metadata: partition values (three-valued) and stats.

Conservative by design: whenever a question cannot be answered exactly the answer is
"may match", never "cannot match", because a wrong "cannot match" would skip a file a
statement needs or let a conflicting commit through.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from txsql.errors import SchemaError
from txsql.log.actions import AddFile
from txsql.log.predicates import (
    FLIPPED,
    NEGATED,
    STRING_PREFIX_LENGTH,
    And,
    Column,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    LiteralValue,
    Not,
    Opaque,
    Or,
    Predicate,
)
from txsql.log.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
    parse_partition_value,
    physical_name,
)

# --- typing values ------------------------------------------------------------------------


# Every integer of magnitude below 2**53 is a double exactly; comparisons between such a
# double literal and any integer order the same as Spark's cast-to-double comparison.
_EXACT_DOUBLE_INTS = 2**53


def _float32(value: float) -> float:
    """The 32-bit float nearest ``value`` (stats of FLOAT columns may print fewer digits)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return value


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
            # Spark casts the string to the column's type (ANSI) or compares as doubles;
            # both agree with an exact comparison for a finite number of moderate size.
            try:
                number = Decimal(value.strip())
            except ArithmeticError:
                raise _Undecidable from None
            if not number.is_finite() or abs(number) >= _EXACT_DOUBLE_INTS:
                raise _Undecidable
            value = number
        if isinstance(value, float) and math.isnan(value):
            raise _Undecidable  # Spark orders NaN above everything; Python does not
        if name in ("float", "double"):
            return float(value)  # Spark compares a float column with a literal as doubles
        if isinstance(value, float) and abs(value) >= _EXACT_DOUBLE_INTS:
            # Spark casts the integer column to DOUBLE: near 2**53 and beyond, distinct
            # integers round to this literal, so exact Python comparison would disagree.
            raise _Undecidable
        return value
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
            if value.tzinfo is None:
                # A zone-less literal is read in the Spark session's time zone, which the
                # log layer cannot know (a user's session need not be UTC).
                raise _Undecidable
            return value.astimezone(dt.timezone.utc)
        if isinstance(value, dt.date):
            if name == "timestamp":
                raise _Undecidable  # midnight in the session's (unknown) time zone
            return dt.datetime(value.year, value.month, value.day)
    if name == "binary" and isinstance(value, bytes):
        return value
    if isinstance(value, str) and name in ("date", "timestamp_ntz", "boolean"):
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
            if math.isnan(number):
                return None
            return _float32(number) if name == "float" else number
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
            return ((p.child.value is None) == isinstance(p, IsNull)) == want
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
        left, right, op = right, left, FLIPPED[op]
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
    return _bound_may(op if want else NEGATED[op], r, value)


def _parse_stats(add: AddFile) -> dict[str, Any] | None:
    if not add.stats:
        return None
    try:
        # Decimals exactly: a float would round a DECIMAL(38, s) bound past a real value.
        stats = json.loads(add.stats, parse_float=Decimal)
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
    if name in ("float", "double"):
        # Parquet writers leave NaN out of min/max, but Spark orders NaN above every value
        # (``x > 1e300`` and ``x != 5`` are TRUE for NaN): the maximum is never a bound.
        hi = None
    if name in ("timestamp", "timestamp_ntz"):
        # Stats keep milliseconds, rows microseconds; truncation may round either way
        # (towards zero before 1970), so widen both ends by 1 ms.
        if isinstance(hi, dt.datetime):
            hi = hi + dt.timedelta(milliseconds=1)
        if isinstance(lo, dt.datetime):
            lo = lo - dt.timedelta(milliseconds=1)
    nulls = get("nullCount")
    num = stats.get("numRecords")
    known = tight and isinstance(nulls, int) and not isinstance(nulls, bool)
    may_null = not known or nulls > 0
    may_value = not (known and isinstance(num, int) and nulls >= num)
    return _Range(dtype, lo, hi, may_null, may_value)
