"""May some row of a file match? Decided on partition values and column stats.

Conservative by design: whenever a question cannot be answered exactly the answer is
"may match", never "cannot match", because a wrong "cannot match" would skip a file a
statement needs or let a conflicting commit through.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.actions import AddFile
from txsql.log.partition_values import parse_partition_value
from txsql.log.predicate_values import (
    Undecidable,
    coerce_literal,
    compare_values,
    field_type,
    stat_value,
)
from txsql.log.predicates import (
    FLIPPED,
    NEGATED,
    STRING_PREFIX_LENGTH,
    And,
    Column,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Opaque,
    Or,
    Predicate,
)
from txsql.log.schema import (
    DataType,
    PrimitiveType,
    StructField,
    StructType,
    physical_name,
)
from txsql.log.type_features import COLLATIONS_KEY
from txsql.log.type_widening import exact_stats

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
    except Undecidable:
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
    except Undecidable:
        return True


def _bound_may(op: str, r: _Range, v: Any) -> bool:
    """Could a non-null value x in [r.lo, r.hi] satisfy ``x op v``?"""
    lo_ok = r.lo is not None
    hi_ok = r.hi is not None
    if op == "=":
        return not (lo_ok and compare_values("<", v, r.lo)) and not (
            hi_ok and compare_values(">", v, r.hi)
        )
    if op == "!=":
        return not (
            lo_ok and hi_ok and compare_values("=", r.lo, r.hi) and compare_values("=", r.lo, v)
        )
    if op == "<":
        return not lo_ok or compare_values("<", r.lo, v)
    if op == "<=":
        return not lo_ok or compare_values("<=", r.lo, v)
    if op == ">":
        return not hi_ok or compare_values(">", r.hi, v)
    return not hi_ok or compare_values(">=", r.hi, v)


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
            raise Undecidable
        r = col(p.child.name)
        if not r.may_value:
            return False
        values = [coerce_literal(v.value, r.dtype) for v in p.values]
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
        raise Undecidable  # column vs column, or constants: not worth modelling
    r = col(left.name)
    value = coerce_literal(right.value, r.dtype)
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
        logical, dtype = field_type(schema, name)
        field = schema.field(logical)
        key = physical_name(field, column_mapping_mode)
        if field.metadata.get(COLLATIONS_KEY):
            # Spark compares a collated column under its collation (UTF8_LCASE: 'a' = 'A');
            # partition values and stats compare in binary: never skip on them.
            return _Range(dtype)
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
        if not _exact_bounds(field):  # bounds written at a narrower type: nulls only
            return replace(_stats_range(stats, key, dtype, tight), lo=None, hi=None)
        return _stats_range(stats, key, dtype, tight)

    return _may_true(p, column_range)


def _exact_bounds(field: StructField) -> bool:
    try:
        return exact_stats(field)
    except UnsupportedFeatureError:  # the snapshot refuses such a schema; stay safe anyway
        return False


def _stats_range(stats: Mapping[str, Any], key: str, dtype: DataType, tight: bool) -> _Range:
    def get(section: str) -> Any:
        values = stats.get(section)
        return values.get(key) if isinstance(values, dict) else None

    lo = stat_value(get("minValues"), dtype)
    hi = stat_value(get("maxValues"), dtype)
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
