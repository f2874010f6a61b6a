"""What a table schema's types demand of the protocol, and the types txsql will not store.

Delta ties some column types to table features: a protocol that lacks them makes other
readers refuse the table (DuckDB: "contains TIMESTAMP_NTZ columns but does not have the
required 'timestampNtz' feature"). Every schema txsql commits goes through here, nested
fields (struct fields, array elements, map keys and values) included.

Types refused outright, by name:

* VARIANT: Spark 4 writes variants shredded (a ``typed_value`` field next to ``value``
  and ``metadata``), which is Delta's ``variantShredding`` feature, not plain
  ``variantType``; txsql writes neither.
* Collated strings (``STRING COLLATE ...``): Delta's collations feature; txsql would
  compare and sort them as plain strings.
* Intervals and VOID: Delta tables cannot store them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.schema import ArrayType, DataType, MapType, PrimitiveType, StructType

# Spark keeps a string field's collation in the field metadata under this key.
COLLATIONS_KEY = "__COLLATIONS"
# Delta records a column's type changes (type widening) in its field metadata.
TYPE_CHANGES_KEY = "delta.typeChanges"

# Feature each type needs, and how the type is spelled for a user.
_TYPE_FEATURES = {"timestamp_ntz": ("timestampNtz", "TIMESTAMP_NTZ")}


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
    return needed


def check_storable(schema: StructType) -> None:
    """Refuse a schema with a type txsql cannot write as Delta requires.

    Raises:
        UnsupportedFeatureError: a VARIANT or collated string column.
        SchemaError: an interval or VOID column (no Delta table can hold one).
    """
    for path, t, meta in leaves(schema):
        name = t.name if isinstance(t, PrimitiveType) else ""
        if name == "variant":
            raise UnsupportedFeatureError(
                f"column {path} has type VARIANT, which txsql cannot write: Spark writes "
                "variants shredded, which needs Delta's variantShredding table feature",
                hint="Store the value as a JSON STRING instead (to_json(v)), and parse it "
                "when reading (parse_json(s)).",
            )
        if name.startswith("interval") or name in ("void", "null"):
            raise SchemaError(
                f"column {path} has type {name.upper()}, which a Delta table cannot store",
                hint="Store intervals as a number of units (e.g. BIGINT seconds), and give "
                "NULL columns a type with CAST(NULL AS <type>).",
            )
        collations = meta.get(COLLATIONS_KEY) if isinstance(meta, dict) else None
        if collations:
            listed = ", ".join(f"{k} {v}" for k, v in sorted(collations.items()))
            raise UnsupportedFeatureError(
                f"column {path} uses a collation ({listed}), which needs Delta's collations "
                "table feature; txsql does not write it",
                hint="Drop the COLLATE clause (CAST(c AS STRING)) so the column holds plain "
                "strings.",
            )
