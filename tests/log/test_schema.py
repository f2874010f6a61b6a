"""Schema JSON model, column mapping names and partition value (de)serialisation."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from tests.fixture_paths import find_fixtures
from txsql.errors import SchemaError
from txsql.log.actions import Metadata
from txsql.log.codec import decode_commit
from txsql.log.partition_values import parse_partition_value, serialize_partition_value
from txsql.log.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_schema,
    parse_type,
    physical_name,
    schema_to_json,
)

FIXTURES = find_fixtures()
COMMIT_NAME = re.compile(r"\d{20}\.json")


def _fixture_schemas() -> list[tuple[str, str]]:
    found = []
    for path in sorted(FIXTURES.glob("*/*/_delta_log/*.json")):
        if COMMIT_NAME.fullmatch(path.name):
            for action in decode_commit(path.read_bytes()):
                if isinstance(action, Metadata):
                    found.append((str(path.relative_to(FIXTURES)), action.schema_string))
    return found


SCHEMAS = _fixture_schemas()

NESTED = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "key"}},
            {"name": "amount", "type": "decimal(38,18)", "nullable": True, "metadata": {}},
            {
                "name": "tags",
                "type": {"type": "array", "elementType": "string", "containsNull": True},
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "attrs",
                "type": {
                    "type": "map",
                    "keyType": "string",
                    "valueType": {
                        "type": "struct",
                        "fields": [
                            {
                                "name": "ts",
                                "type": "timestamp_ntz",
                                "nullable": True,
                                "metadata": {},
                            }
                        ],
                    },
                    "valueContainsNull": False,
                },
                "nullable": True,
                "metadata": {"delta.columnMapping.id": 4},
            },
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)


def test_fixture_schemas_found() -> None:
    assert len(SCHEMAS) >= 15


@pytest.mark.parametrize(("where", "text"), SCHEMAS, ids=[w for w, _ in SCHEMAS])
def test_fixture_schema_round_trips(where: str, text: str) -> None:
    schema = parse_schema(text)
    assert json.loads(schema_to_json(schema)) == json.loads(text)
    assert schema.fields


def test_nested_schema_round_trips_byte_for_byte() -> None:
    schema = parse_schema(NESTED)
    assert schema_to_json(schema) == NESTED
    assert schema.field("amount").type == DecimalType(38, 18)
    assert schema.field("tags").type == ArrayType(PrimitiveType("string"), True)
    attrs = schema.field("ATTRS")
    assert isinstance(attrs.type, MapType) and attrs.type.value_contains_null is False
    assert isinstance(attrs.type.value_type, StructType)
    assert attrs.type.value_type.field("ts").type == PrimitiveType("timestamp_ntz")
    assert schema.field("id").nullable is False and schema.field("id").metadata == {
        "comment": "key"
    }
    assert schema.names == ("id", "amount", "tags", "attrs", "d")


def test_missing_field_is_schema_error() -> None:
    with pytest.raises(SchemaError, match="nope"):
        parse_schema(NESTED).field("nope")


@pytest.mark.parametrize(
    "bad",
    [
        '{"type":"struct","fields":[{"name":"x","type":"uuid","nullable":true,"metadata":{}}]}',
        '{"type":"struct","fields":[{"name":"x","type":{"type":"tuple"},"nullable":true}]}',
        '{"type":"struct","fields":[{"name":"x","type":{"type":"array"},"nullable":true}]}',
        '"long"',
        "{not json",
    ],
)
def test_invalid_schemas(bad: str) -> None:
    with pytest.raises(SchemaError):
        parse_schema(bad)


def test_column_mapping_physical_names_from_fixture() -> None:
    path = FIXTURES / "delta-golden/dv-with-columnmapping/_delta_log/00000000000000000000.json"
    meta = next(a for a in decode_commit(path.read_bytes()) if isinstance(a, Metadata))
    schema = parse_schema(meta.schema_string)
    mode = meta.configuration["delta.columnMapping.mode"]
    assert {f.name: physical_name(f, mode) for f in schema.fields} == {
        "part": "col-60c949ca-b8bc-4330-b931-b73fb4c60037",
        "col1": "col-9f0743fd-a52e-44a7-92e0-72a3d34231b1",
        "col2": "col-ae46e8ed-607b-4b7c-8a13-44991fe0a2e4",
    }
    assert physical_name(schema.field("part"), "none") == "part"
    assert physical_name(StructField("x", PrimitiveType("long")), "name") == "x"


UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("text", "type_", "value"),
    [
        ("42", PrimitiveType("integer"), 42),
        ("-9223372036854775808", PrimitiveType("long"), -9223372036854775808),
        ("7", PrimitiveType("byte"), 7),
        ("1.5", PrimitiveType("double"), 1.5),
        ("12.340", DecimalType(10, 3), Decimal("12.340")),
        ("true", PrimitiveType("boolean"), True),
        ("false", PrimitiveType("boolean"), False),
        ("2024-02-29", PrimitiveType("date"), dt.date(2024, 2, 29)),
        ("a b/c=d", PrimitiveType("string"), "a b/c=d"),
        (
            "2021-03-04 05:06:07.123456",
            PrimitiveType("timestamp"),
            dt.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        ),
        (
            "2021-03-04 05:06:07.000000",
            PrimitiveType("timestamp_ntz"),
            dt.datetime(2021, 3, 4, 5, 6, 7),
        ),
    ],
)
def test_partition_value_round_trip(text: str, type_: DataType, value: object) -> None:
    parsed = parse_partition_value(text, type_)
    assert parsed == value and type(parsed) is type(value)
    assert serialize_partition_value(parsed, type_) in (text, str(value))
    assert parse_partition_value(serialize_partition_value(parsed, type_), type_) == value


@pytest.mark.parametrize(
    "type_", [PrimitiveType("integer"), PrimitiveType("string"), PrimitiveType("timestamp")]
)
def test_null_partition_values(type_: DataType) -> None:
    assert parse_partition_value(None, type_) is None
    assert parse_partition_value("", type_) is None
    assert serialize_partition_value(None, type_) is None


@pytest.mark.parametrize(
    "text",
    [
        "2021-03-04 05:06:07",
        "2021-03-04T05:06:07Z",
        "2021-03-04T05:06:07.000Z",
        "2021-03-04T07:06:07+02:00",
        "2021-03-04 05:06:07.0",
    ],
)
def test_timestamp_spellings(text: str) -> None:
    value = parse_partition_value(text, PrimitiveType("timestamp"))
    assert value == dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert serialize_partition_value(value, PrimitiveType("timestamp")) == (
        "2021-03-04 05:06:07.000000"
    )


def test_serialize_converts_aware_timestamps_to_utc() -> None:
    cet = dt.timezone(dt.timedelta(hours=1))
    value = dt.datetime(2021, 1, 1, 1, 0, tzinfo=cet)
    assert serialize_partition_value(value, PrimitiveType("timestamp")) == (
        "2021-01-01 00:00:00.000000"
    )


def test_serialize_formats() -> None:
    assert serialize_partition_value(Decimal("3"), DecimalType(5, 2)) == "3.00"
    assert serialize_partition_value(True, PrimitiveType("boolean")) == "true"
    assert serialize_partition_value(5, PrimitiveType("long")) == "5"
    assert serialize_partition_value(float("nan"), PrimitiveType("double")) == "NaN"
    assert serialize_partition_value(dt.date(2020, 1, 2), PrimitiveType("date")) == "2020-01-02"


@pytest.mark.parametrize(
    ("text", "type_"),
    [
        ("abc", PrimitiveType("integer")),
        ("yes", PrimitiveType("boolean")),
        ("2021-13-01", PrimitiveType("date")),
        ("yesterday", PrimitiveType("timestamp")),
        ("x", DecimalType(5, 2)),
        ("1", PrimitiveType("variant")),
        ("1", ArrayType(PrimitiveType("long"))),
    ],
)
def test_invalid_partition_values(text: str, type_: DataType) -> None:
    with pytest.raises(SchemaError):
        parse_partition_value(text, type_)


@pytest.mark.parametrize(
    ("type_", "where"),
    [
        ("foo", "column c: unknown data type 'foo'"),
        ({"type": "struct", "fields": [{"name": "x", "type": "bar"}]}, "column c.x: unknown"),
        ({"type": "mystery"}, "column c: unknown data type 'mystery'"),
    ],
)
def test_unknown_type_names_raise_a_typed_error_naming_the_column(type_: Any, where: str) -> None:
    text = json.dumps({"type": "struct", "fields": [{"name": "c", "type": type_}]})
    with pytest.raises(SchemaError, match=re.escape(where)) as info:
        parse_schema(text)
    assert info.value.hint


def test_geospatial_types_parse_by_name() -> None:
    assert parse_type("geometry(OGC:CRS84)") == PrimitiveType("geometry(OGC:CRS84)")
    assert parse_type("geography(OGC:CRS84, x)") == PrimitiveType("geography(OGC:CRS84, x)")
