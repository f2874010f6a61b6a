"""The columns of a scan as SQL text: one ``selectExpr`` instead of a py4j call per part.

Every piece of a PySpark ``Column`` (``F.col``, ``.cast``, ``.alias``, ``F.crc32``...) is a
round trip to the JVM on classic PySpark, two or three for a function: built from
``Column`` pieces, the scan of a 4-column table takes ~100 round trips to name its columns
and ~50 more for its helper columns, as many as the rest of a statement together (about
0.1 ms each on an idle machine, far more on a loaded one; figures in
``benchmarks/README.md``, "Point DML and JVM round trips"). A ``selectExpr`` takes the
same columns as text, parsed once by the JVM.

A data column named ``_metadata`` would shadow Spark's hidden ``_metadata`` struct in SQL
text, so such tables keep the ``Column`` API for the helper columns
(:func:`~txsql.engine.scan_files.metadata_field`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from txsql.engine.scan_files import ScanHelpers, ScanLayout, metadata_field
from txsql.engine.schema import TableSchema, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_METADATA = "_metadata"


def with_helpers(df: DataFrame, layout: ScanLayout, *, key: bool, row: bool) -> DataFrame:
    """``df`` (a Parquet read) plus the file key, helper ``key`` (``crc32`` of Spark's file
    path, or the path itself when CRCs collide), and the row index, helper ``row``, as asked."""
    if not key and not row:
        return df
    h, long_keys = layout.helpers, layout.long_keys
    if _shadows_metadata(layout.schema):
        path, index = metadata_field(df, "file_path"), metadata_field(df, "row_index")
        columns = {h.key: F.crc32(path.cast("binary")) if long_keys else path, h.row: index}
        return df.withColumns({n: c for n, c in columns.items() if n in _names(key, row, h)})
    path_sql = f"{_METADATA}.file_path"
    texts = ["*"]
    if key:
        key_sql = f"crc32(CAST({path_sql} AS BINARY))" if long_keys else path_sql
        texts.append(f"{key_sql} AS {quote(h.key)}")
    if row:
        texts.append(f"{_METADATA}.row_index AS {quote(h.row)}")
    return df.selectExpr(*texts)


def select_output(df: DataFrame, layout: ScanLayout, lookups: Mapping[str, str]) -> DataFrame:
    """The scan's output: data columns renamed to logical names, partition values and
    ``_file`` (SQL text of ``lookups``, keyed by helper name, else the joined helper
    columns), then the row index when the layout asks for row ids."""
    schema, h = layout.schema, layout.helpers
    texts: list[str] = []
    partitions = {c.logical_name: i for i, c in enumerate(schema.partition_columns)}
    for column in schema.columns:
        if column.is_partition:
            helper = h.parts[partitions[column.logical_name]]
            texts.append(f"{lookups.get(helper, quote(helper))} AS {quote(column.logical_name)}")
        elif column.read_type == column.logical_type:
            texts.append(f"{quote(column.physical_name)} AS {quote(column.logical_name)}")
        else:  # nested fields renamed by a cast: see TableSchema.logical_data_column
            return df.select(_output_columns(layout, lookups))
    texts += _lineage_texts(layout, lookups)
    if layout.with_row_ids:
        file_sql = lookups.get(h.info_file, quote(h.info_file))
        texts += [f"{file_sql} AS {quote(h.file_out)}", f"{quote(h.row)} AS {quote(h.row_out)}"]
    return df.selectExpr(*texts)


def _lineage_texts(layout: ScanLayout, lookups: Mapping[str, str]) -> list[str]:
    """Each row's stable row id and row commit version (PROTOCOL.md "Row Tracking"): the
    materialized value where a copy wrote one, else the fresh one (the file's
    ``baseRowId`` + the physical row index; its ``defaultRowCommitVersion``)."""
    if layout.lineage is None:
        return []
    h = layout.helpers
    row_id, version = (quote(name) for name in layout.lineage)
    if layout.stored_lineage:
        return [row_id, version]
    base_id = lookups.get(h.base_row_id, quote(h.base_row_id))
    base_version = lookups.get(h.base_version, quote(h.base_version))
    return [
        f"coalesce({row_id}, {base_id} + {quote(h.row)}) AS {row_id}",
        f"coalesce({version}, {base_version}) AS {version}",
    ]


def sql_type(data_type: DataType) -> str:
    """``data_type`` as Spark SQL type text, nested fields (all nullable) quoted.

    >>> from pyspark.sql.types import IntegerType, StructField
    >>> sql_type(MapType(IntegerType(), StructType([StructField("a b", IntegerType())])))
    'MAP<int, STRUCT<`a b`: int>>'
    """
    if isinstance(data_type, StructType):
        fields = ", ".join(f"{quote(f.name)}: {sql_type(f.dataType)}" for f in data_type.fields)
        return f"STRUCT<{fields}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{sql_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{sql_type(data_type.keyType)}, {sql_type(data_type.valueType)}>"
    return data_type.simpleString()


def _output_columns(layout: ScanLayout, lookups: Mapping[str, str]) -> list[Column]:
    """:func:`select_output` as ``Column`` objects, for tables with renamed nested fields."""
    schema, h = layout.schema, layout.helpers
    out = []
    partitions = {c.logical_name: i for i, c in enumerate(schema.partition_columns)}
    for column in schema.columns:
        if column.is_partition:
            helper = h.parts[partitions[column.logical_name]]
            out.append(F.expr(lookups.get(helper, quote(helper))).alias(column.logical_name))
        else:
            out.append(schema.logical_data_column(column, F.col(quote(column.physical_name))))
    out += [F.expr(text) for text in _lineage_texts(layout, lookups)]
    if layout.with_row_ids:
        file_sql = lookups.get(h.info_file, quote(h.info_file))
        out += [F.expr(file_sql).alias(h.file_out), F.col(quote(h.row)).alias(h.row_out)]
    return out


def _shadows_metadata(schema: TableSchema) -> bool:
    # Spark resolves names case-insensitively unless told otherwise: assume it does.
    return any(c.physical_name.lower() == _METADATA for c in schema.data_columns)


def _names(key: bool, row: bool, h: ScanHelpers) -> set[str]:
    return ({h.key} if key else set()) | ({h.row} if row else set())
