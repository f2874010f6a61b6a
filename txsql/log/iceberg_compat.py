"""icebergCompatV2 (PROTOCOL.md "Iceberg Compatibility V2"): what a writer keeps true.

While ``delta.enableIcebergCompatV2`` is on, the table must stay readable as an Iceberg V2
table from the same data files, so every writer guarantees:

* column mapping ``name`` or ``id``, and every field's Parquet ``field_id``, down to array
  elements and map keys and values (:mod:`txsql.log.field_ids`; written by
  :mod:`txsql.engine.parquet_ids`);
* no deletion vectors in use (Iceberg V2 does not read them): DML copies files on write
  (:func:`txsql.log.properties.deletion_vectors_enabled` says no);
* partition columns materialized in every data file, and ``numRecords`` in every add's
  stats (txsql always writes it);
* only the types Iceberg V2 has, and icebergCompatV1 not active;
* a REPLACE keeps the partition columns.

:func:`check` refuses metadata that breaks a rule, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from txsql.errors import UnsupportedFeatureError
from txsql.log.actions import Metadata
from txsql.log.field_ids import missing_nested_ids
from txsql.log.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructType,
    parse_schema,
)

ENABLE_PROPERTY = "delta.enableIcebergCompatV2"
V1_PROPERTY = "delta.enableIcebergCompatV1"
# PROTOCOL.md's allow-list (decimal, array, map and struct are checked by kind).
_ICEBERG_PRIMITIVES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean"}
    | {"timestamp", "timestamp_ntz", "date"}
)


def active(configuration: Mapping[str, str]) -> bool:
    """Whether the table must stay Iceberg V2 compatible.

    >>> active({"delta.enableIcebergCompatV2": "TRUE"}), active({})
    (True, False)
    """
    return configuration.get(ENABLE_PROPERTY, "").strip().lower() == "true"


def check(metadata: Metadata, existing: Metadata | None = None) -> None:
    """Refuse ``metadata`` (a write's, ``existing`` the table's before it) if it breaks a rule
    of icebergCompatV2 while the feature is active.

    Raises:
        UnsupportedFeatureError: the rule broken, named, with how to fix it.
    """
    conf = metadata.configuration
    if not active(conf):
        return
    mode = conf.get("delta.columnMapping.mode", "none").strip().lower()
    if mode not in ("name", "id"):
        _refuse(
            f"column mapping mode is {mode!r}, and it must be 'name' or 'id'",
            "Set 'delta.columnMapping.mode' = 'name' with the property.",
        )
    if conf.get(V1_PROPERTY, "").strip().lower() == "true":
        _refuse(
            "icebergCompatV1 is active too",
            "Turn one of them off: ALTER TABLE ... UNSET TBLPROPERTIES "
            "('delta.enableIcebergCompatV1').",
        )
    schema = parse_schema(metadata.schema_string)
    outside = [f"{path} ({name})" for path, name in _types(schema, "")]
    if outside:
        _refuse(
            f"column(s) {', '.join(outside)} have types Iceberg V2 does not have",
            "Store those values in one of Iceberg's types (e.g. STRING), or turn the property off.",
        )
    missing = missing_nested_ids(schema)
    if missing:
        _refuse(
            f"the schema gives no nested field id for {', '.join(missing)}",
            "Tables made by Delta Spark with the property carry them; txsql does not assign "
            "nested ids, so create such a table with Delta Spark.",
        )
    if existing is not None and active(existing.configuration):
        before, after = list(existing.partition_columns), list(metadata.partition_columns)
        if before != after:
            _refuse(
                f"the partition columns would change from {before} to {after}",
                "Keep the partition columns, or turn the property off first.",
            )


def _types(data_type: DataType, path: str) -> Iterator[tuple[str, str]]:
    """(path, type name) of every type outside Iceberg V2's under ``data_type``."""
    if isinstance(data_type, StructType):
        for f in data_type.fields:
            yield from _types(f.type, f"{path}.{f.name}" if path else f.name)
    elif isinstance(data_type, ArrayType):
        yield from _types(data_type.element_type, f"{path}.element")
    elif isinstance(data_type, MapType):
        yield from _types(data_type.key_type, f"{path}.key")
        yield from _types(data_type.value_type, f"{path}.value")
    elif isinstance(data_type, PrimitiveType) and data_type.name not in _ICEBERG_PRIMITIVES:
        yield path, data_type.name


def _refuse(problem: str, hint: str) -> None:
    raise UnsupportedFeatureError(
        f"this table keeps Iceberg V2 compatibility ({ENABLE_PROPERTY} = true), but {problem}",
        hint=hint,
    )
