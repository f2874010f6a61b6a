"""Delta schemas as Spark types: the logical table schema and the physical Parquet schema.

``metaData.schemaString`` is Spark's ``StructType`` JSON with logical column names. Under
column mapping (``delta.columnMapping.mode`` ``name`` or ``id``) the Parquet files and the
``partitionValues`` keys use each field's ``delta.columnMapping.physicalName`` instead, at every
nesting level (struct fields inside structs, arrays and maps too). This module derives

* the logical :class:`~pyspark.sql.types.StructType` a scan returns,
* the physical read schema handed to Spark's Parquet reader, and
* the projection that turns physical columns back into logical ones.

A column created before column mapping was enabled may lack a physical name; Delta then
uses the logical name, and so do we.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructField, StructType

from txsql.engine.spark_types import MAX_DECIMAL_PRECISION, spark_schema
from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.type_widening import TYPE_CHANGES_KEY, integral_sources

PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
FIELD_ID_KEY = "delta.columnMapping.id"
# Field metadata that only matters to the log; scans return clean fields (a type-change
# history copied into a new table by CREATE TABLE AS SELECT would claim typeWidening).
_INTERNAL_METADATA_PREFIXES = ("delta.columnMapping.", "parquet.field.id", TYPE_CHANGES_KEY)


@dataclass(frozen=True)
class ColumnInfo:
    """One top-level column of a table.

    Attributes:
        logical_name: The name users see (and the schema JSON holds).
        physical_name: The name in Parquet files and ``partitionValues`` keys.
        logical_type: The Spark type with logical nested field names.
        physical_type: The same type with physical nested field names (what writes cast to).
        is_partition: True for partition columns (values live in the log, not the files).
        read_type: ``physical_type`` as scans read it: decimals once widened from an
            integer at a precision Spark reads old integer files with (:func:`read_decimal`).
    """

    logical_name: str
    physical_name: str
    logical_type: DataType
    physical_type: DataType
    is_partition: bool
    read_type: DataType


@dataclass(frozen=True)
class TableSchema:
    """A table schema resolved for reading: logical and physical sides of every column."""

    logical: StructType
    columns: tuple[ColumnInfo, ...]
    mapping_mode: str

    @property
    def data_columns(self) -> tuple[ColumnInfo, ...]:
        """Columns stored in the data files, in schema order."""
        return tuple(c for c in self.columns if not c.is_partition)

    @property
    def partition_columns(self) -> tuple[ColumnInfo, ...]:
        """Partition columns, in schema order."""
        return tuple(c for c in self.columns if c.is_partition)

    def physical_read_schema(self) -> StructType:
        """The schema to read the data files with (physical names, no partition columns)."""
        return StructType(
            [StructField(c.physical_name, c.read_type, True) for c in self.data_columns]
        )

    def logical_data_column(self, column: ColumnInfo, source: Column | None = None) -> Column:
        """Turn the physical data column ``column`` into its logical form.

        A top-level rename is an alias; nested field names are renamed with a cast, which
        Spark applies to structs by position (so it works inside arrays and maps too).
        """
        expr = source if source is not None else F.col(quote(column.physical_name))
        if column.read_type != column.logical_type:
            # Spark refuses casts to NOT NULL nested fields; the files were written under
            # the same constraint, so reading the fields as nullable loses nothing.
            expr = expr.cast(_nullable(column.logical_type))
        return expr.alias(column.logical_name)


def quote(name: str) -> str:
    """Backquote a column name for ``F.col`` (names may hold dots, spaces, backquotes).

    >>> quote("a.b`c")
    '`a.b``c`'
    """
    return "`" + name.replace("`", "``") + "`"


def logical_schema(schema_json: Mapping[str, Any]) -> StructType:
    """The table's logical Spark schema, without Delta's internal field metadata."""
    parsed = spark_schema(schema_json)
    result = _strip_metadata(parsed)
    assert isinstance(result, StructType)
    return result


def physical_type(data_type: DataType, mode: str, *, widen: bool = False) -> DataType:
    """``data_type`` with every nested struct field renamed to its physical name.

    Field metadata (which carries the physical names and type changes) must still be
    present, so pass types from :func:`spark_schema`, not from :func:`logical_schema`.

    ``widen``: the scan's read type, where a decimal once widened from an integer is read
    at a precision the old files' ints fit (:func:`read_decimal`) and cast back after.
    """
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(
                    physical_name(f.name, f.metadata, mode),
                    _field_type(f, mode, widen),
                    f.nullable,
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        element = physical_type(data_type.elementType, mode, widen=widen)
        return ArrayType(element, data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            physical_type(data_type.keyType, mode, widen=widen),
            physical_type(data_type.valueType, mode, widen=widen),
            data_type.valueContainsNull,
        )
    return data_type


def _field_type(f: StructField, mode: str, widen: bool) -> DataType:
    renamed = physical_type(f.dataType, mode, widen=widen)
    return _widened(renamed, f, "", f.name) if widen else renamed


def read_decimal(data_type: DecimalType, digits: int, column: str) -> DecimalType:
    """The type to read a DECIMAL(p, s) column with when some files hold it as an integer
    needing ``digits`` integral digits (10 for INT32, 20 for INT64).

    Spark's vectorized Parquet reader refuses INT32 -> DECIMAL(4, 1) (measured on 4.1:
    FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH) but reads INT32 -> DECIMAL(11, 1)
    and DECIMAL(4, 1) files -> DECIMAL(11, 1); every value fits the table's type again, so
    the cast back loses nothing.

    >>> read_decimal(DecimalType(4, 1), 10, "c")
    DecimalType(11,1)
    """
    if data_type.precision - data_type.scale >= digits:
        return data_type
    precision = data_type.scale + digits
    if precision > MAX_DECIMAL_PRECISION:
        raise UnsupportedFeatureError(
            f"column {column} was widened from an integer to {data_type.simpleString()}; "
            "Spark cannot read the old integer files at that scale (table feature "
            "typeWidening)",
            hint="Read this table with Delta Spark, or rewrite the column's old files there.",
        )
    return DecimalType(precision, data_type.scale)


def _widened(data_type: DataType, field: StructField, path: str, column: str) -> DataType:
    """``data_type`` (a position of ``field``, ``path`` its ``fieldPath``) with decimals
    widened from integers read by :func:`read_decimal`."""
    digits = integral_sources(field.metadata, column) if field.metadata else {}
    if not digits:
        return data_type
    return _widen_at(data_type, digits, path, column)


def _widen_at(data_type: DataType, digits: dict[str, int], path: str, column: str) -> DataType:
    def sub(name: str) -> str:
        return f"{path}.{name}" if path else name

    if isinstance(data_type, DecimalType) and path in digits:
        return read_decimal(data_type, digits[path], column)
    if isinstance(data_type, ArrayType):
        element = _widen_at(data_type.elementType, digits, sub("element"), column)
        return ArrayType(element, data_type.containsNull)
    if isinstance(data_type, MapType):
        key = _widen_at(data_type.keyType, digits, sub("key"), column)
        value = _widen_at(data_type.valueType, digits, sub("value"), column)
        return MapType(key, value, data_type.valueContainsNull)
    return data_type


def physical_name(name: str, metadata: Mapping[str, Any] | None, mode: str) -> str:
    """The physical name of a field under column-mapping ``mode``.

    >>> physical_name("v", {PHYSICAL_NAME_KEY: "col-1"}, "name")
    'col-1'
    >>> physical_name("v", {PHYSICAL_NAME_KEY: "col-1"}, "none")
    'v'
    """
    if mode in ("name", "id") and metadata:
        physical = metadata.get(PHYSICAL_NAME_KEY)
        if isinstance(physical, str) and physical:
            return physical
    return name


def table_schema(
    schema_json: Mapping[str, Any], partition_columns: Sequence[str], mapping_mode: str = "none"
) -> TableSchema:
    """Resolve a Delta schema for reading.

    Args:
        schema_json: ``snapshot.schema_json`` (Spark StructType JSON, logical names).
        partition_columns: Logical names of the partition columns (``metaData``).
        mapping_mode: ``delta.columnMapping.mode`` (``none``, ``name`` or ``id``).

    Returns:
        The logical schema and, per top-level column, its physical name and types.

    Raises:
        SchemaError: If a partition column is not in the schema.
    """
    mode = mapping_mode.lower()
    with_metadata = spark_schema(schema_json)
    logical = logical_schema(schema_json)
    by_lower = {p.lower() for p in partition_columns}
    names = {f.name.lower() for f in with_metadata.fields}
    missing = [p for p in partition_columns if p.lower() not in names]
    if missing:
        raise SchemaError(
            f"partition column(s) {', '.join(missing)} are not in the table schema",
            hint="The table's metadata is inconsistent; it was not written by a Delta writer.",
        )
    columns = tuple(
        ColumnInfo(
            logical_name=f.name,
            physical_name=physical_name(f.name, f.metadata, mode),
            logical_type=lf.dataType,
            physical_type=_field_type(f, mode, widen=False),
            is_partition=f.name.lower() in by_lower,
            read_type=_field_type(f, mode, widen=True),
        )
        for f, lf in zip(with_metadata.fields, logical.fields)
    )
    return TableSchema(logical, columns, mode)


def _nullable(data_type: DataType) -> DataType:
    """``data_type`` with every nested field, element and value nullable."""
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in data_type.fields]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _strip_metadata(data_type: DataType) -> DataType:
    """Drop column-mapping metadata everywhere (users and Parquet need not see it)."""
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(
                    f.name,
                    _strip_metadata(f.dataType),
                    f.nullable,
                    {
                        k: v
                        for k, v in (f.metadata or {}).items()
                        if not k.startswith(_INTERNAL_METADATA_PREFIXES)
                    },
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_strip_metadata(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            _strip_metadata(data_type.keyType),
            _strip_metadata(data_type.valueType),
            data_type.valueContainsNull,
        )
    return data_type
