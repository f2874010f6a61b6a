"""Delta schema JSON to PySpark types, with a typed error for anything that does not map.

PySpark's ``StructType.fromJson`` raises a bare ``AssertionError`` on a collation id with a
version (``icu.en_US.72``), ``IllegalArgumentException`` on a geography algorithm it does
not know, and ``ValueError`` on an unknown type name, none of which says which column is at
fault. txsql parses the schema itself (:mod:`txsql.log.schema`, which names the column)
and builds the Spark types here:

* collated strings: the field metadata ``__COLLATIONS`` maps a path (the field's name, or
  ``name.element``, ``name.key``, ``name.value`` below it) to ``provider.name[.version]``;
  the string at that path becomes ``StringType(name)``, which Spark compares and sorts
  under the collation. The key is dropped from the field metadata, as Spark does.
* ``variant`` becomes ``VariantType`` (Spark's Parquet reader reads both the unshredded
  struct of ``value``/``metadata`` and shredded files with ``typed_value``).
* Types a reader must refuse (geospatial, intervals) raise a typed error naming the
  column; the snapshot refuses them earlier (:func:`txsql.log.features.check_snapshot_readable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import types as T

from txsql.errors import SchemaError
from txsql.log import schema as log_schema
from txsql.log.type_features import COLLATIONS_KEY, collation_names

MAX_DECIMAL_PRECISION = 38
_ATOMIC: dict[str, T.DataType] = {
    "string": T.StringType(),
    "long": T.LongType(),
    "integer": T.IntegerType(),
    "short": T.ShortType(),
    "byte": T.ByteType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "binary": T.BinaryType(),
    "date": T.DateType(),
    "timestamp": T.TimestampType(),
    "timestamp_ntz": T.TimestampNTZType(),
    "void": T.NullType(),
    "null": T.NullType(),
    "variant": T.VariantType(),
}


def spark_schema(schema_json: Mapping[str, Any]) -> T.StructType:
    """The Spark ``StructType`` of a Delta schema (``snapshot.schema_json``), field
    metadata kept (minus ``__COLLATIONS``, which the string types carry).

    Raises:
        SchemaError: a type or collation with no Spark counterpart, naming the column.
    """
    parsed = log_schema.parse_type(dict(schema_json))
    if not isinstance(parsed, log_schema.StructType):
        raise SchemaError("the table schema must be a struct")
    return spark_struct(parsed, "")


def spark_struct(struct: log_schema.StructType, path: str) -> T.StructType:
    """``struct`` as a Spark struct; ``path`` is its column path in errors ('' at the top)."""
    return T.StructType([_field(f, f"{path}.{f.name}" if path else f.name) for f in struct.fields])


def _field(f: log_schema.StructField, column: str) -> T.StructField:
    metadata = dict(f.metadata)
    raw = metadata.pop(COLLATIONS_KEY, None)
    collations = collation_names(raw, column) if raw is not None else {}
    data_type = _type(f.type, f.name, column, collations)
    return T.StructField(f.name, data_type, f.nullable, metadata)


def _type(t: log_schema.DataType, key: str, column: str, collations: dict[str, str]) -> T.DataType:
    """``t`` at ``key`` (the ``__COLLATIONS`` path of this position) of ``column``."""
    if isinstance(t, log_schema.StructType):
        return spark_struct(t, column)
    if isinstance(t, log_schema.ArrayType):
        element = _type(t.element_type, f"{key}.element", f"{column}.element", collations)
        return T.ArrayType(element, t.contains_null)
    if isinstance(t, log_schema.MapType):
        k = _type(t.key_type, f"{key}.key", f"{column}.key", collations)
        v = _type(t.value_type, f"{key}.value", f"{column}.value", collations)
        return T.MapType(k, v, t.value_contains_null)
    if isinstance(t, log_schema.DecimalType):
        if not 0 <= t.scale <= t.precision <= MAX_DECIMAL_PRECISION:
            raise _unmappable(column, f"decimal({t.precision},{t.scale}) is out of range")
        return T.DecimalType(t.precision, t.scale)
    name = t.name
    if name == "string" and key in collations:
        return _collated(collations[key], column)
    if name.startswith("string collate "):  # Spark's own spelling, rare in Delta logs
        return _collated(name[len("string collate ") :], column)
    if name in _ATOMIC:
        return _ATOMIC[name]
    raise _unmappable(column, f"txsql cannot read type {name}")


def _collated(collation: str, column: str) -> T.DataType:
    if collation.upper() == "UTF8_BINARY":  # the default: a plain STRING
        return T.StringType()
    return T.StringType(collation)


def _unmappable(column: str, reason: str) -> SchemaError:
    return SchemaError(
        f"column {column}: {reason}",
        hint="Read this table with an engine that supports the type, or select the other "
        "columns there.",
    )
