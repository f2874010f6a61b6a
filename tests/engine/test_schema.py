"""Read and write types of widened columns: scans read old integer files at a decimal
precision Spark accepts, writes keep the table's type."""

from __future__ import annotations

from pyspark.sql.types import ArrayType, DecimalType, StructField, StructType

from tests.engine.feature_tables import changes, field, struct
from txsql.engine.schema import table_schema


def test_integer_to_decimal_widenings_are_read_wider_and_written_as_declared() -> None:
    schema = struct(
        field("b", "decimal(5,2)", changes(("byte", "decimal(5,2)", ""))),
        field(
            "a",
            {"type": "array", "elementType": "decimal(21,1)", "containsNull": True},
            changes(("long", "decimal(21,1)", "element")),
        ),
        field("s", struct(field("x", "decimal(6,1)", changes(("short", "decimal(6,1)", ""))))),
        field("d", "decimal(20,5)", changes(("decimal(10,2)", "decimal(20,5)", ""))),
    )
    b, a, s, d = table_schema(schema, []).columns
    assert (b.physical_type, b.read_type) == (DecimalType(5, 2), DecimalType(12, 2))
    assert a.read_type == ArrayType(DecimalType(21, 1))  # 20 integral digits already
    assert s.physical_type == StructType([StructField("x", DecimalType(6, 1))])
    assert s.read_type == StructType([StructField("x", DecimalType(11, 1))])
    assert d.read_type == d.physical_type == d.logical_type == DecimalType(20, 5)
