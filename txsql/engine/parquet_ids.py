"""Parquet field ids on every field of a written file, array elements and map entries too.

Spark's Parquet writer sets a ``field_id`` only where a ``StructField`` carries
``parquet.field.id`` metadata: top-level columns and struct fields, never the elements of
an array or the keys and values of a map, which have no ``StructField``. Column mapping's
``id`` mode and icebergCompatV2 need all of them (:mod:`txsql.log.field_ids`), so the files
Spark wrote for such a table are rewritten once with pyarrow, before they join the table,
with every id set: the values, types and Spark's footer metadata are kept as they are.
This costs one more read and write of the new files, on the driver, for those tables only.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from txsql.log.field_ids import FieldId

_ID_KEY = b"PARQUET:field_id"


def needs_field_ids(column_mapping_mode: str, iceberg_compat: bool) -> bool:
    """Whether the files of a table must carry every field id (see the module doc).

    >>> needs_field_ids("id", False), needs_field_ids("name", True), needs_field_ids("name", False)
    (True, True, False)
    """
    return column_mapping_mode == "id" or iceberg_compat


def set_field_ids(path: str, ids: tuple[FieldId, ...]) -> None:
    """Rewrite the Parquet file at ``path`` (in place, through a temporary file beside it)
    with the ids of ``ids`` on its fields, matched by name; fields ``ids`` does not name
    (a change feed's ``_change_type``) keep none."""
    table = pq.read_table(path)
    by_name = {node.name: node for node in ids}
    fields = [_with_id(f, by_name.get(f.name)) for f in table.schema]
    schema = pa.schema(fields, metadata=table.schema.metadata)
    temporary = f"{path}.ids.tmp"
    # Spark stores small decimals as integers; keep them so (the same physical types).
    pq.write_table(
        table.cast(schema), temporary, compression="snappy", store_decimal_as_integer=True
    )
    os.replace(temporary, path)


def _with_id(field: pa.Field, node: FieldId | None) -> pa.Field:
    if node is None:
        return field
    field = field.with_type(_typed(field.type, node))
    if node.id is None:
        return field
    metadata = dict(field.metadata or {})
    metadata[_ID_KEY] = str(node.id).encode()
    return field.with_metadata(metadata)


def _typed(data_type: pa.DataType, node: FieldId) -> pa.DataType:
    """``data_type`` with its children's ids (structs by name, lists and maps by position)."""
    children = {child.name: child for child in node.children}
    if pa.types.is_struct(data_type):
        return pa.struct([_with_id(f, children.get(f.name)) for f in data_type])
    if pa.types.is_map(data_type):
        key = _with_id(data_type.key_field, children.get("key"))
        item = _with_id(data_type.item_field, children.get("value"))
        return pa.map_(key, item, keys_sorted=data_type.keys_sorted)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        element = _with_id(data_type.value_field, children.get("element"))
        return pa.list_(element) if pa.types.is_list(data_type) else pa.large_list(element)
    return data_type
