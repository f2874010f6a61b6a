"""Delta schema JSON to Spark types: collations, VARIANT, and typed errors naming the column
where PySpark's own ``StructType.fromJson`` raises a bare AssertionError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import types as T

from txsql.engine.spark_types import spark_schema
from txsql.errors import SchemaError


def field(name: str, type_: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def test_collated_strings_become_collated_string_types_at_every_position() -> None:
    array = {"type": "array", "elementType": "string", "containsNull": True}
    mapped = {"type": "map", "keyType": "string", "valueType": array, "valueContainsNull": True}
    collations = {
        "m.key": "icu.UNICODE",
        "m.value.element": "spark.UTF8_LCASE",
    }
    converted = spark_schema(
        schema(
            field("plain", "string"),
            field("l", "string", {"__COLLATIONS": {"l": "spark.UTF8_LCASE"}, "comment": "x"}),
            field("m", mapped, {"__COLLATIONS": collations}),
            field("s", schema(field("u", "string", {"__COLLATIONS": {"u": "icu.en_US.72"}}))),
        )
    )
    plain, lcase, m, s = converted.fields
    assert plain.dataType == T.StringType()
    assert lcase.dataType == T.StringType("UTF8_LCASE")
    assert lcase.metadata == {"comment": "x"}  # the collation moved into the type
    assert m.dataType == T.MapType(T.StringType("UNICODE"), T.ArrayType(T.StringType("UTF8_LCASE")))
    assert s.dataType == T.StructType([T.StructField("u", T.StringType("en_US"))])


def test_pyspark_from_json_matches_on_what_it_can_parse() -> None:
    text = schema(
        field("v", "variant"),
        field("l", "string", {"__COLLATIONS": {"l": "spark.UTF8_LCASE"}}),
        field("t", "timestamp_ntz"),
        field("d", "decimal(20,5)", {"delta.typeChanges": [{"fromType": "a", "toType": "b"}]}),
    )
    assert spark_schema(text) == T.StructType.fromJson(json.loads(json.dumps(text)))


def test_a_versioned_collation_id_is_no_assertion_error() -> None:
    text = schema(field("c", "string", {"__COLLATIONS": {"c": "icu.en_US.72"}}))
    with pytest.raises(AssertionError):  # why txsql maps the schema itself
        T.StructType.fromJson(text)
    assert spark_schema(text).fields[0].dataType == T.StringType("en_US")


@pytest.mark.parametrize(
    ("type_", "metadata", "words"),
    [
        ("foo", {}, "column c: unknown data type 'foo'"),
        ("geometry(OGC:CRS84)", {}, "column c: txsql cannot read type geometry"),
        ("interval day to second", {}, "column c: txsql cannot read type interval"),
        ("string", {"__COLLATIONS": {"c": "nope"}}, "column c has a collation"),
        ("decimal(50,2)", {}, "column c: decimal(50,2) is out of range"),
    ],
)
def test_unmappable_schemas_raise_typed_errors_naming_the_column(
    type_: str, metadata: dict[str, Any], words: str
) -> None:
    with pytest.raises(SchemaError) as info:
        spark_schema(schema(field("c", type_, metadata)))
    assert words in info.value.message
    assert info.value.hint
