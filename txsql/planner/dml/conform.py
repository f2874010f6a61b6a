"""Fit query output to a table schema: column matching, casts and NOT NULL checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from txsql.errors import SchemaError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def conform_to_schema(
    df: DataFrame,
    schema_json: dict[str, Any],
    columns: Sequence[str] | None,
    table: str,
) -> DataFrame:
    """Return ``df`` with exactly the table's columns, in order, cast to their types.

    Without a column list the query's columns match the table's by position (like Spark's
    INSERT); with one, they match the listed columns and unlisted columns become NULL.
    NOT NULL columns fail the write (so nothing commits) when a NULL arrives.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(schema_json)
    target_names = [f.name for f in schema.fields]
    # Query columns are matched by position, as Spark does: rename them to unique names so
    # duplicate output names (INSERT ... SELECT 2, 'c', 2) are never ambiguous.
    source = [f"_c{i}" for i in range(len(df.columns))]
    df = df.toDF(*source)
    if columns is None:
        if len(source) != len(target_names):
            raise SchemaError(
                f"cannot write to {table}: the query produces {len(source)} column(s) but the "
                f"table has {len(target_names)} ({', '.join(target_names)})",
                hint="Select one value per table column, or name the columns: "
                "INSERT INTO t (a, b) ...",
            )
        mapping = dict(zip(target_names, source))
    else:
        lowered = {n.lower(): n for n in target_names}
        unknown = [c for c in columns if c.lower() not in lowered]
        if unknown:
            raise SchemaError(
                f"cannot write to {table}: unknown column(s) {', '.join(unknown)}",
                hint=f"The table's columns are {', '.join(target_names)}.",
            )
        if len(columns) != len(source):
            raise SchemaError(
                f"cannot write to {table}: {len(columns)} column(s) listed but the query "
                f"produces {len(source)}",
                hint="List one column per value.",
            )
        mapping = {lowered[c.lower()]: s for c, s in zip(columns, source)}
    projected: list[Column] = []
    for field in schema.fields:
        source_name = mapping.get(field.name)
        if source_name is None:
            value = F.lit(None).cast(field.dataType)
        else:
            value = F.col(f"`{source_name}`").cast(field.dataType)
        if not field.nullable:
            message = f"NOT NULL constraint violated: column {field.name} of {table} got NULL"
            value = F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value)
        projected.append(value.alias(field.name))
    return df.select(*projected)
