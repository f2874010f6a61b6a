"""Delta's table schema (Spark's StructType JSON) without Spark.

``metaData.schemaString`` is Spark's ``StructType.json()``. The log layer needs it for
column mapping, partition value typing and stats, and must not import pyspark, so this
module models it with frozen dataclasses that round-trip the JSON exactly in meaning.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Union

from txsql.errors import SchemaError

# Spark's JSON names of the atomic types. ``null`` is NullType's pre-3.0 spelling.
PRIMITIVE_NAMES = frozenset(
    {"string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary"}
    | {"date", "timestamp", "timestamp_ntz", "void", "null", "variant", "interval"}
)
_UNKNOWN = (
    "txsql reads Delta's atomic, decimal, array, map, struct and variant types; read this "
    "table with an engine that knows the type."
)
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_COLLATED = re.compile(r"string collate \S+")
# Geospatial types (feature ``geospatial``): ``geometry(<crs>)``, ``geography(<crs>, <alg>)``.
_GEO = re.compile(r"(geometry|geography)\(.*\)")


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """An atomic type named as in Spark's JSON (``long``, ``timestamp_ntz``...)."""

    name: str


@dataclass(frozen=True, slots=True)
class DecimalType:
    precision: int = 10
    scale: int = 0


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True


@dataclass(frozen=True, slots=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> StructField:
        """Look a top-level field up by name, case-insensitively like Spark.

        >>> parse_schema('{"type":"struct","fields":[{"name":"Id","type":"long",'
        ...     '"nullable":true,"metadata":{}}]}').field("id").type
        PrimitiveType(name='long')
        """
        for f in self.fields:
            if f.name == name:
                return f
        lowered = name.lower()
        for f in self.fields:
            if f.name.lower() == lowered:
                return f
        raise SchemaError(
            f"column {name!r} not found; the table has {', '.join(self.names) or 'no columns'}"
        )


DataType = Union[PrimitiveType, DecimalType, ArrayType, MapType, StructType]


# --- JSON -> model -----------------------------------------------------------------------


def parse_type(value: Any) -> DataType:
    """Decode one ``type`` value of Spark's schema JSON.

    >>> parse_type("decimal(12,2)")
    DecimalType(precision=12, scale=2)
    >>> parse_type({"type": "array", "elementType": "date", "containsNull": False})
    ArrayType(element_type=PrimitiveType(name='date'), contains_null=False)
    """
    if isinstance(value, str):
        if value in PRIMITIVE_NAMES or _COLLATED.fullmatch(value):
            return PrimitiveType(value)
        if value == "decimal":
            return DecimalType()
        m = _DECIMAL.fullmatch(value)
        if m:
            return DecimalType(int(m.group(1)), int(m.group(2)))
        if value.startswith("interval "):  # ANSI intervals: "interval day to second"
            return PrimitiveType(value)
        if _GEO.fullmatch(value):  # kept by name: readers refuse it (type_features)
            return PrimitiveType(value)
        raise SchemaError(f"unknown data type {value!r} in the table schema", hint=_UNKNOWN)
    if not isinstance(value, dict):
        raise SchemaError(f"invalid data type {value!r} in the table schema")
    try:
        kind = value["type"]
        if kind == "struct":
            return StructType(tuple(_parse_field(f) for f in value["fields"]))
        if kind == "array":
            return ArrayType(parse_type(value["elementType"]), bool(value["containsNull"]))
        if kind == "map":
            return MapType(
                parse_type(value["keyType"]),
                parse_type(value["valueType"]),
                bool(value["valueContainsNull"]),
            )
        if kind == "udt" and "sqlType" in value:  # user-defined types are stored as sqlType
            return parse_type(value["sqlType"])
    except (KeyError, TypeError) as exc:
        raise SchemaError(f"malformed data type {value!r:.200}: missing {exc}") from exc
    raise SchemaError(f"unknown data type {kind!r} in the table schema", hint=_UNKNOWN)


def _parse_field(obj: dict[str, Any]) -> StructField:
    try:
        data_type = parse_type(obj["type"])
    except SchemaError as exc:
        # Name the column: "column s.x: unknown data type 'foo'" says where to look.
        inner = exc.message.removeprefix("column ")
        sep = "." if inner is not exc.message else ": "
        raise SchemaError(f"column {obj.get('name')}{sep}{inner}", hint=exc.hint) from None
    return StructField(
        obj["name"],
        data_type,
        bool(obj.get("nullable", True)),
        dict(obj.get("metadata") or {}),
    )


def parse_schema(schema_string: str) -> StructType:
    """Parse ``metaData.schemaString``.

    Raises:
        SchemaError: invalid JSON, not a struct, or an unknown type name.

    >>> parse_schema('{"type":"struct","fields":[]}')
    StructType(fields=())
    """
    try:
        obj = json.loads(schema_string)
    except ValueError as exc:
        raise SchemaError(f"the table schema is not valid JSON: {exc}") from exc
    result = parse_type(obj)
    if not isinstance(result, StructType):
        raise SchemaError(f"the table schema must be a struct, got {schema_string[:80]!r}")
    return result


# --- model -> JSON -----------------------------------------------------------------------


def type_to_json_value(t: DataType) -> Any:
    """The JSON value Spark writes for ``t`` (a string for atomic types, else an object)."""
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, ArrayType):
        return {
            "type": "array",
            "elementType": type_to_json_value(t.element_type),
            "containsNull": t.contains_null,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "keyType": type_to_json_value(t.key_type),
            "valueType": type_to_json_value(t.value_type),
            "valueContainsNull": t.value_contains_null,
        }
    return {
        "type": "struct",
        "fields": [
            {
                "name": f.name,
                "type": type_to_json_value(f.type),
                "nullable": f.nullable,
                "metadata": f.metadata,
            }
            for f in t.fields
        ],
    }


def schema_to_json(s: StructType) -> str:
    """Serialise like Spark's ``StructType.json()`` (compact, Spark's key order).

    >>> text = '{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string",'
    >>> text += '"valueType":"decimal(5,1)","valueContainsNull":true},"nullable":false,"metadata":{}}]}'
    >>> schema_to_json(parse_schema(text)) == text
    True
    """  # noqa: E501
    return json.dumps(type_to_json_value(s), separators=(",", ":"), ensure_ascii=False)


def physical_name(field: StructField, mode: str) -> str:
    """The column's name in data files and partition values under column-mapping ``mode``.

    Columns created before column mapping was enabled may lack a physical name; Spark then
    uses the logical name, and so do we.

    >>> f = StructField("v", PrimitiveType("long"), True, {"delta.columnMapping.physicalName": "col-1"})
    >>> physical_name(f, "name"), physical_name(f, "none")
    ('col-1', 'v')
    """  # noqa: E501
    if mode.lower() in ("name", "id"):
        physical = field.metadata.get("delta.columnMapping.physicalName")
        if isinstance(physical, str) and physical:
            return physical
    return field.name


# --- column mapping (protocol "Column Mapping") ------------------------------------------

MAPPING_ID = "delta.columnMapping.id"
MAPPING_PHYSICAL = "delta.columnMapping.physicalName"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"


def new_physical_name() -> str:
    """A fresh physical name as Delta Spark makes them: ``col-<uuid4>``."""

    return f"col-{uuid.uuid4()}"


def max_column_id(schema_json: dict[str, Any], configuration: dict[str, str]) -> int:
    """The highest column id in use: ``maxColumnId`` or any id in the schema, whichever is
    larger (a table written by a careless engine may have ids above the property)."""
    highest = int(configuration.get(MAX_COLUMN_ID, "0") or 0)
    for f in _json_fields(schema_json):
        value = f.get("metadata", {}).get(MAPPING_ID)
        if isinstance(value, int):
            highest = max(highest, value)
    return highest


def assign_column_mapping(
    schema_json: dict[str, Any], next_id: int, *, keep_names: bool
) -> tuple[dict[str, Any], int]:
    """Give every field (nested struct fields too) without one an id and a physical name.

    ``keep_names`` makes the physical name the field's current name: that is how Delta
    enables mapping on an existing table, whose data files already use those names. New
    tables and new columns get ``col-<uuid>`` names instead. Returns the new schema JSON
    (the argument is not changed) and the highest id used.

    >>> s = {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True,
    ...      "metadata": {}}]}
    >>> out, top = assign_column_mapping(s, 5, keep_names=True)
    >>> out["fields"][0]["metadata"], top
    ({'delta.columnMapping.id': 6, 'delta.columnMapping.physicalName': 'a'}, 6)
    """
    result = json.loads(json.dumps(schema_json))
    highest = next_id
    for f in _json_fields(result):
        metadata = f.setdefault("metadata", {})
        if MAPPING_ID not in metadata:
            highest += 1
            metadata[MAPPING_ID] = highest
        if not metadata.get(MAPPING_PHYSICAL):
            metadata[MAPPING_PHYSICAL] = f["name"] if keep_names else new_physical_name()
    return result, highest


def _json_fields(value: Any) -> Any:
    """Every struct field of a schema JSON value, depth first (inside arrays and maps too)."""
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "struct":
            for f in value.get("fields", []):
                yield f
                yield from _json_fields(f.get("type"))
        elif kind == "array":
            yield from _json_fields(value.get("elementType"))
        elif kind == "map":
            yield from _json_fields(value.get("keyType"))
            yield from _json_fields(value.get("valueType"))
