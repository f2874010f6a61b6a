"""Typing literal, partition and stats values so they compare as Spark compares them.

Shared by the two evaluators over file metadata: partition values
(:mod:`txsql.log.predicate_eval`) and stats (:mod:`txsql.log.file_skipping`). Anything that
cannot be typed or compared exactly raises :class:`Undecidable`, which both turn into
"may match".
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any

from txsql.errors import SchemaError
from txsql.log.partition_values import parse_partition_value
from txsql.log.predicates import (
    LiteralValue,
)
from txsql.log.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
)

# Every integer of magnitude below 2**53 is a double exactly; comparisons between such a
# double literal and any integer order the same as Spark's cast-to-double comparison.
_EXACT_DOUBLE_INTS = 2**53


def float32(value: float) -> float:
    """The 32-bit float nearest ``value`` (stats of FLOAT columns may print fewer digits)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return value


class Undecidable(Exception):
    """Raised internally when a value cannot be typed or compared exactly."""


def coerce_literal(value: LiteralValue, dtype: DataType) -> Any:
    """``value`` as a Python value comparable with values of a ``dtype`` column."""
    if value is None:
        return None
    if isinstance(dtype, DecimalType):
        if isinstance(value, bool):
            raise Undecidable
        if isinstance(value, (int, Decimal)):
            return Decimal(value)
        if isinstance(value, (float, str)):
            try:
                return Decimal(str(value).strip())
            except ArithmeticError:
                raise Undecidable from None
        raise Undecidable
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name in ("long", "integer", "short", "byte", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
            raise Undecidable
        if isinstance(value, str):
            # Spark casts the string to the column's type (ANSI) or compares as doubles;
            # both agree with an exact comparison for a finite number of moderate size.
            try:
                number = Decimal(value.strip())
            except ArithmeticError:
                raise Undecidable from None
            if not number.is_finite() or abs(number) >= _EXACT_DOUBLE_INTS:
                raise Undecidable
            value = number
        if isinstance(value, float) and math.isnan(value):
            raise Undecidable  # Spark orders NaN above everything; Python does not
        if name in ("float", "double"):
            return float(value)  # Spark compares a float column with a literal as doubles
        if isinstance(value, float) and abs(value) >= _EXACT_DOUBLE_INTS:
            # Spark casts the integer column to DOUBLE: near 2**53 and beyond, distinct
            # integers round to this literal, so exact Python comparison would disagree.
            raise Undecidable
        return value
    if name == "string" or name.startswith("string collate"):
        # A non-string literal makes Spark cast the column, which changes the comparison.
        if isinstance(value, str) and not name.startswith("string collate"):
            return value
        raise Undecidable
    if name == "boolean" and isinstance(value, bool):
        return value
    if name == "date":
        if isinstance(value, dt.datetime):
            raise Undecidable
        if isinstance(value, dt.date):
            return value
    if name in ("timestamp", "timestamp_ntz"):
        if isinstance(value, dt.datetime):
            if name == "timestamp_ntz":
                if value.tzinfo is not None:
                    raise Undecidable
                return value
            if value.tzinfo is None:
                # A zone-less literal is read in the Spark session's time zone, which the
                # log layer cannot know (a user's session need not be UTC).
                raise Undecidable
            return value.astimezone(dt.timezone.utc)
        if isinstance(value, dt.date):
            if name == "timestamp":
                raise Undecidable  # midnight in the session's (unknown) time zone
            return dt.datetime(value.year, value.month, value.day)
    if name == "binary" and isinstance(value, bytes):
        return value
    if isinstance(value, str) and name in ("date", "timestamp_ntz", "boolean"):
        try:
            return parse_partition_value(value, dtype)
        except SchemaError:
            raise Undecidable from None
    raise Undecidable


def stat_value(raw: Any, dtype: DataType) -> Any:
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
            return float32(number) if name == "float" else number
        if name == "string":
            return raw if isinstance(raw, str) else None
        if name in ("date", "timestamp", "timestamp_ntz", "boolean") and isinstance(raw, str):
            return parse_partition_value(raw, dtype)
        if name == "boolean" and isinstance(raw, bool):
            return raw
    except (ValueError, ArithmeticError, SchemaError):
        return None
    return None


def compare_values(op: str, a: Any, b: Any) -> bool:
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
        raise Undecidable from None


def field_type(schema: StructType, name: str) -> tuple[str, DataType]:
    try:
        f = schema.field(name)
    except SchemaError:
        raise Undecidable from None
    return f.name, f.type
