"""Type widening on read: the type changes a schema records and what they mean for a reader.

PROTOCOL.md "Type Widening" and "Type Change Metadata": a column whose type was widened
(``ALTER COLUMN c TYPE BIGINT`` on an INT column) keeps its old data files, written at the
narrow type; the schema holds the wide type, and the nearest ancestor field's metadata
records the history under ``delta.typeChanges``, a JSON array of
``{"fromType", "toType"[, "fieldPath"][, "tableVersion"]}`` (``fieldPath`` names an array
element or map key/value below the field: ``element``, ``key``, ``value.element``...).

A reader must read the old files at the new type and refuse a change it does not know.
The changes allowed are the protocol's list, with integral -> decimal as Delta Spark
implements it (``DecimalType.isWiderThan``: ``p - s`` at least the integral type's
digits, so BYTE -> DECIMAL(4, 1) is allowed; the spec's ``10 + k1`` is the INT case).

Stats written before a change keep the old type. Integers and decimals are exact JSON
numbers, so their bounds stay true at the new type; a FLOAT bound read as a DOUBLE is the
float's shortest decimal text, not its value (-1.1f is -1.100000023841858...), and DATE ->
TIMESTAMP_NTZ bounds are not specified: files are never skipped on those bounds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_type,
)

TYPE_CHANGES_KEY = "delta.typeChanges"

# Decimal digits each integral type needs (Spark's DecimalType.forType).
INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}
_INTEGRAL_ORDER = ("byte", "short", "integer", "long")


@dataclass(frozen=True, slots=True)
class TypeChange:
    """One recorded change: ``field_path`` is '' for the field itself, else the position
    below it (``element``, ``key``, ``value.element``...)."""

    column: str
    field_path: str
    from_type: DataType
    to_type: DataType


def is_allowed(old: DataType, new: DataType) -> bool:
    """Whether ``old`` -> ``new`` is a widening the protocol allows.

    >>> is_allowed(PrimitiveType("byte"), DecimalType(4, 1))
    True
    >>> is_allowed(DecimalType(10, 2), DecimalType(10, 3))
    False
    >>> is_allowed(PrimitiveType("long"), PrimitiveType("double"))
    False
    """
    a = old.name if isinstance(old, PrimitiveType) else ""
    b = new.name if isinstance(new, PrimitiveType) else ""
    if a in _INTEGRAL_ORDER and b in _INTEGRAL_ORDER:
        return _INTEGRAL_ORDER.index(a) < _INTEGRAL_ORDER.index(b)
    if b == "double":
        return a in ("float", "byte", "short", "integer")
    if (a, b) == ("date", "timestamp_ntz"):
        return True
    if isinstance(new, DecimalType):
        if a in INTEGRAL_DIGITS:
            return new.precision - new.scale >= INTEGRAL_DIGITS[a]
        if isinstance(old, DecimalType):
            integral_old, integral_new = old.precision - old.scale, new.precision - new.scale
            return new.scale >= old.scale and integral_new >= integral_old
    return False


def field_changes(f: StructField, column: str = "") -> list[TypeChange]:
    """The type changes recorded on field ``f`` (``column`` names it in errors).

    Raises:
        UnsupportedFeatureError: the entry is malformed or names a change txsql cannot read.
    """
    return metadata_changes(f.metadata, column or f.name)


def metadata_changes(metadata: Mapping[str, Any], column: str) -> list[TypeChange]:
    """:func:`field_changes` from a field's metadata (Spark's or the log's)."""
    raw = metadata.get(TYPE_CHANGES_KEY)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _refuse(column, f"{TYPE_CHANGES_KEY} is not a list: {raw!r:.120}")
    changes = []
    for entry in raw:
        if not isinstance(entry, dict):
            raise _refuse(column, f"a {TYPE_CHANGES_KEY} entry is not an object: {entry!r:.120}")
        path = entry.get("fieldPath", "")
        where = f"{column}.{path}" if path else column
        try:
            old, new = parse_type(entry["fromType"]), parse_type(entry["toType"])
        except (KeyError, SchemaError) as exc:
            raise _refuse(where, f"unreadable entry {entry!r:.160} ({exc})") from None
        if not is_allowed(old, new):
            spelled = f"{entry['fromType']} -> {entry['toType']}"
            raise _refuse(where, f"the type change {spelled} is not a widening Delta allows")
        changes.append(TypeChange(where, str(path), old, new))
    return changes


def schema_changes(schema: StructType) -> Iterator[TypeChange]:
    """Every type change recorded anywhere in ``schema`` (nested fields included)."""
    for column, f in _fields(schema, ""):
        yield from field_changes(f, column)


def exact_stats(f: StructField) -> bool:
    """Whether ``f``'s min/max stats are true bounds at its current type whatever type the
    file was written at (False: a float or date history, see the module docstring)."""
    for change in field_changes(f):
        old = change.from_type
        name = old.name if isinstance(old, PrimitiveType) else ""
        if not (isinstance(old, DecimalType) or name in INTEGRAL_DIGITS):
            return False
    return True


def integral_sources(metadata: Mapping[str, Any], column: str) -> dict[str, int]:
    """``fieldPath`` -> the most decimal digits an integral type it once had needs, for
    positions that were widened from an integral type to a decimal. Spark's vectorized
    Parquet reader reads an integer column as DECIMAL(p, s) only when ``p - s`` holds
    every digit of the physical int (10 for INT32, 20 for INT64)."""
    digits: dict[str, int] = {}
    for change in metadata_changes(metadata, column):
        old = change.from_type
        name = old.name if isinstance(old, PrimitiveType) else ""
        if name in INTEGRAL_DIGITS and isinstance(change.to_type, DecimalType):
            physical = 20 if name == "long" else 10  # byte/short/int are INT32 in Parquet
            digits[change.field_path] = max(digits.get(change.field_path, 0), physical)
    return digits


def _fields(t: DataType, path: str) -> Iterator[tuple[str, StructField]]:
    if isinstance(t, StructType):
        for f in t.fields:
            column = f"{path}.{f.name}" if path else f.name
            yield column, f
            yield from _fields(f.type, column)
    elif isinstance(t, ArrayType):
        yield from _fields(t.element_type, f"{path}.element")
    elif isinstance(t, MapType):
        yield from _fields(t.key_type, f"{path}.key")
        yield from _fields(t.value_type, f"{path}.value")


def _refuse(column: str, reason: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"column {column} has a type change txsql cannot read (table feature "
        f"typeWidening): {reason}",
        hint="Read the table with an engine that supports this change (Delta Spark), or "
        "rewrite the column at its current type there so the history can be dropped.",
    )
