"""What a table schema's types demand of the protocol, and the types txsql will not store.

Delta ties some column types to table features: a protocol that lacks them makes other
readers refuse the table (DuckDB: "contains TIMESTAMP_NTZ columns but does not have the
required 'timestampNtz' feature"). Every schema txsql commits goes through here, nested
fields (struct fields, array elements, map keys and values) included.

Collated strings (``STRING COLLATE ...``) need the writer feature ``collations``; their
stats are plain UTF-8 binary bounds, which the protocol always allows (readers never skip
on them for a collated comparison: txsql.log.file_skipping).

VARIANT columns need ``variantType``; txsql writes them unshredded (a ``value`` and a
``metadata`` binary, txsql.engine.spark turns Spark's shredding off), which every variant
table allows, and gives them no min/max stats.

Types refused outright, by name:

* Intervals and VOID: Delta tables cannot store them (a VOID column Delta Spark made is
  kept, see :func:`void_columns`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructType,
    parse_schema,
)
from txsql.log.type_widening import TYPE_CHANGES_KEY, schema_changes

# Spark keeps a string field's collation in the field metadata under this key.
COLLATIONS_KEY = "__COLLATIONS"
# Collation ids are ``provider.name[.version]``; Spark knows these providers.
COLLATION_PROVIDERS = ("spark", "icu")

# Feature each type needs, and how the type is spelled for a user.
_TYPE_FEATURES = {
    "timestamp_ntz": ("timestampNtz", "TIMESTAMP_NTZ"),
    "variant": ("variantType", "VARIANT"),
}


def leaves(schema: StructType) -> Iterator[tuple[str, DataType, dict[str, Any]]]:
    """``(column path, type, metadata of the nearest field)`` of every type in ``schema``,
    containers included (``a.element``, ``m.key``, ``m.value`` name nested positions)."""

    def walk(path: str, t: DataType, meta: dict[str, Any]) -> Iterator[tuple[str, DataType, Any]]:
        yield path, t, meta
        if isinstance(t, StructType):
            for f in t.fields:
                yield from walk(f"{path}.{f.name}" if path else f.name, f.type, f.metadata)
        elif isinstance(t, ArrayType):
            yield from walk(f"{path}.element", t.element_type, {})
        elif isinstance(t, MapType):
            yield from walk(f"{path}.key", t.key_type, {})
            yield from walk(f"{path}.value", t.value_type, {})

    for path, t, meta in walk("", schema, {}):
        if path:
            yield path, t, meta


def needed_features(schema: StructType) -> dict[str, str]:
    """Table features the schema's types need, each with the first column needing it.

    >>> from txsql.log.schema import parse_schema
    >>> needed_features(parse_schema('{"type":"struct","fields":[{"name":"s","type":'
    ...     '{"type":"array","elementType":"timestamp_ntz","containsNull":true},'
    ...     '"nullable":true,"metadata":{}}]}'))
    {'timestampNtz': 's.element (TIMESTAMP_NTZ)'}
    """
    needed: dict[str, str] = {}
    for path, t, meta in leaves(schema):
        if isinstance(t, PrimitiveType) and t.name in _TYPE_FEATURES:
            feature, spelled = _TYPE_FEATURES[t.name]
            needed.setdefault(feature, f"{path} ({spelled})")
        if TYPE_CHANGES_KEY in meta:
            needed.setdefault("typeWidening", f"{path} (a widened type)")
        if meta.get(COLLATIONS_KEY) and isinstance(t, PrimitiveType) and t.name == "string":
            needed.setdefault("collations", f"{path} (a collated string)")
    return needed


def void_columns(schema: StructType) -> frozenset[str]:
    """Top-level VOID (NullType) columns: Delta Spark keeps them in the schema and writes no
    Parquet column for them (the ``void-column`` fixture holds one)."""
    return frozenset(f.name for f in schema.fields if f.type == PrimitiveType("void"))


def check_storable(schema: StructType, existing_void: frozenset[str] = frozenset()) -> None:
    """Refuse a schema with a type txsql cannot write as Delta requires; the top-level VOID
    columns in ``existing_void`` (already in the table) are kept, always NULL.

    Raises:
        SchemaError: an interval or VOID column (no Delta table can hold one).
    """
    for path, t, _ in leaves(schema):
        name = t.name if isinstance(t, PrimitiveType) else ""
        if name == "void" and path in existing_void:
            continue
        if name.startswith("interval") or name in ("void", "null"):
            raise SchemaError(
                f"column {path} has type {name.upper()}, which a Delta table cannot store",
                hint="Store intervals as a number of units (e.g. BIGINT seconds), and give "
                "NULL columns a type with CAST(NULL AS <type>).",
            )


@functools.lru_cache(maxsize=64)
def readable_schema(schema_string: str) -> StructType | None:
    """``schema_string`` parsed and checked by :func:`check_readable_schema`; None when it
    does not parse (the log stays readable, its history too; a scan reports the error).
    Every statement takes a snapshot: each schema text is checked once, not every time."""
    try:
        schema = parse_schema(schema_string)
    except SchemaError:
        return None
    check_readable_schema(schema)
    return schema


def check_readable_schema(schema: StructType) -> None:
    """Refuse a schema txsql cannot read, naming the column and the reason.

    Raises:
        UnsupportedFeatureError: a geospatial column (Spark 4.1 keeps its geometry and
            geography types disabled), or a type change txsql does not know.
        SchemaError: a collation id that is not ``provider.name[.version]`` of a provider
            Spark knows.
    """
    for path, t, meta in leaves(schema):
        name = t.name if isinstance(t, PrimitiveType) else ""
        if name.startswith(("geometry(", "geography(")):
            raise UnsupportedFeatureError(
                f"column {path} has type {name} (table feature geospatial), which txsql "
                "cannot read: Spark 4.1 keeps its geospatial types disabled",
                hint="Read this table with an engine that supports geospatial columns, or "
                "select the other columns there.",
            )
        collations = meta.get(COLLATIONS_KEY) if isinstance(meta, dict) else None
        if collations is not None:
            collation_names(collations, path)
    for _ in schema_changes(schema):  # raises on a change txsql cannot read
        pass


def collation_names(collations: Any, column: str) -> dict[str, str]:
    """A field's ``__COLLATIONS`` map as path -> Spark collation name (``spark.UTF8_LCASE``
    -> ``UTF8_LCASE``, ``icu.de_DE.72`` -> ``de_DE``).

    >>> collation_names({"c": "spark.UTF8_LCASE", "c.element": "icu.UNICODE"}, "c")
    {'c': 'UTF8_LCASE', 'c.element': 'UNICODE'}

    Raises:
        SchemaError: not a map of strings, or an id txsql cannot map.
    """
    if not isinstance(collations, dict):
        raise _bad_collation(column, f"{COLLATIONS_KEY} is not a map: {collations!r:.80}")
    names: dict[str, str] = {}
    for key, value in collations.items():
        parts = value.split(".") if isinstance(value, str) else []
        if len(parts) not in (2, 3) or parts[0].lower() not in COLLATION_PROVIDERS:
            raise _bad_collation(column, f"collation id {value!r:.80} for {key}")
        names[str(key)] = parts[1]
    return names


def _bad_collation(column: str, what: str) -> SchemaError:
    return SchemaError(
        f"column {column} has a collation txsql cannot map to Spark's: {what} (ids are "
        f"provider.name[.version], providers {', '.join(COLLATION_PROVIDERS)})",
        hint="Read this table with the engine that wrote it.",
    )
