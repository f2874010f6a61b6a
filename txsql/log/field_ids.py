"""Parquet field ids of a column-mapped schema, down to array elements and map entries.

Under column mapping every field has an id (``delta.columnMapping.id``). A field's array
elements and map keys and values have theirs in its ``delta.columnMapping.nested.ids``,
keyed by a path of physical names: ``<physical>.element``, ``<physical>.key``,
``<physical>.value.element``... (PROTOCOL.md "Column Mapping", "Iceberg Compatibility V2").
Data files carry them as Parquet ``field_id``: readers of ``id`` mode find columns by id,
and Iceberg readers of an icebergCompatV2 table need every one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from txsql.log.schema import ArrayType, DataType, MapType, StructField, StructType

ID_KEY = "delta.columnMapping.id"
NESTED_IDS_KEY = "delta.columnMapping.nested.ids"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"


@dataclass(frozen=True)
class FieldId:
    """One Parquet field: its name in the file (physical, or ``element``/``key``/``value``
    for a ``nested`` one: an array's or map's child), its id (None: the schema gives none)
    and its children's."""

    name: str
    id: int | None
    children: tuple[FieldId, ...] = ()
    nested: bool = False


def field_ids(schema: StructType) -> tuple[FieldId, ...]:
    """The id tree of every top-level column.

    >>> from txsql.log.schema import parse_schema
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"a","nullable":true,'
    ...     '"type":{"type":"array","elementType":"integer","containsNull":true},"metadata":'
    ...     '{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a",'
    ...     '"delta.columnMapping.nested.ids":{"col-a.element":2}}}]}')
    >>> [(f.name, f.id, [(c.name, c.id, c.nested) for c in f.children]) for f in field_ids(s)]
    [('col-a', 1, [('element', 2, True)])]
    """
    return tuple(_field(f) for f in schema.fields)


def missing_nested_ids(schema: StructType) -> list[str]:
    """Paths of array elements and map keys/values that have no nested id.

    >>> from txsql.log.schema import parse_schema
    >>> missing_nested_ids(parse_schema('{"type":"struct","fields":[{"name":"m","nullable":'
    ...     'true,"type":{"type":"map","keyType":"string","valueType":"long",'
    ...     '"valueContainsNull":true},"metadata":{}}]}'))
    ['m.key', 'm.value']
    """
    return [path for path, node in _walk(field_ids(schema), "") if node.id is None]


def _walk(nodes: tuple[FieldId, ...], prefix: str) -> Iterator[tuple[str, FieldId]]:
    """(path of nested elements, node) for the array/map children under ``nodes``."""
    for node in nodes:
        path = f"{prefix}.{node.name}" if prefix else node.name
        if node.nested:
            yield path, node
        yield from _walk(node.children, path)


def _field(field: StructField) -> FieldId:
    meta = field.metadata
    name = str(meta.get(PHYSICAL_NAME_KEY) or field.name)
    nested = meta.get(NESTED_IDS_KEY) or {}
    raw = meta.get(ID_KEY)
    return FieldId(name, raw if isinstance(raw, int) else None, _children(field.type, name, nested))


def _children(data_type: DataType, path: str, nested: dict[str, int]) -> tuple[FieldId, ...]:
    if isinstance(data_type, StructType):
        return tuple(_field(f) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return (_nested("element", data_type.element_type, path, nested),)
    if isinstance(data_type, MapType):
        return (
            _nested("key", data_type.key_type, path, nested),
            _nested("value", data_type.value_type, path, nested),
        )
    return ()


def _nested(name: str, data_type: DataType, parent: str, nested: dict[str, int]) -> FieldId:
    path = f"{parent}.{name}"
    raw = nested.get(path)
    known = raw if isinstance(raw, int) else None
    return FieldId(name, known, _children(data_type, path, nested), nested=True)
