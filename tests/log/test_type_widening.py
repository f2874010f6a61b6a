"""Type widening on read: which recorded changes txsql reads, and where it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from txsql.errors import UnsupportedFeatureError
from txsql.log.actions import Metadata, Protocol
from txsql.log.features import check_snapshot_readable
from txsql.log.schema import StructField, parse_schema, parse_type
from txsql.log.type_widening import exact_stats, integral_sources, is_allowed, schema_changes

# PROTOCOL.md "Type Widening" (integral -> decimal as Delta Spark's isWiderThan).
ALLOWED = [
    ("byte", "short"),
    ("byte", "integer"),
    ("short", "long"),
    ("integer", "long"),
    ("float", "double"),
    ("byte", "double"),
    ("short", "double"),
    ("integer", "double"),
    ("date", "timestamp_ntz"),
    ("decimal(10,2)", "decimal(20,2)"),
    ("decimal(10,2)", "decimal(20,5)"),
    ("byte", "decimal(4,1)"),
    ("short", "decimal(6,1)"),
    ("integer", "decimal(10,0)"),
    ("long", "decimal(21,1)"),
]
REFUSED = [
    ("long", "integer"),
    ("long", "double"),  # loses precision: not a widening
    ("double", "float"),
    ("timestamp_ntz", "date"),
    ("date", "timestamp"),
    ("decimal(10,2)", "decimal(10,3)"),  # fewer integral digits
    ("decimal(10,2)", "decimal(12,1)"),  # scale decreased
    ("integer", "decimal(9,0)"),
    ("long", "decimal(20,1)"),
    ("string", "binary"),
]


@pytest.mark.parametrize(("old", "new"), ALLOWED)
def test_allowed_widenings(old: str, new: str) -> None:
    assert is_allowed(parse_type(old), parse_type(new))


@pytest.mark.parametrize(("old", "new"), REFUSED)
def test_other_changes_are_not_widenings(old: str, new: str) -> None:
    assert not is_allowed(parse_type(old), parse_type(new))


def changed(name: str, type_: Any, *changes: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "nullable": True,
        "metadata": {"delta.typeChanges": list(changes)},
    }


def metadata_of(*fields: dict[str, Any]) -> Metadata:
    return Metadata("id", json.dumps({"type": "struct", "fields": list(fields)}))


WIDENING = Protocol(3, 7, ("typeWidening",), ("typeWidening",))


def test_nested_changes_are_found_with_their_field_path() -> None:
    array = {"type": "array", "elementType": "long", "containsNull": True}
    inner = changed("x", array, {"fromType": "integer", "toType": "long", "fieldPath": "element"})
    schema = parse_schema(
        metadata_of(
            {"name": "s", "type": {"type": "struct", "fields": [inner]}, "nullable": True}
        ).schema_string
    )
    (change,) = schema_changes(schema)
    assert (change.column, change.field_path) == ("s.x.element", "element")


def test_an_unsupported_change_is_refused_by_column_and_feature() -> None:
    metadata = metadata_of(changed("c", "integer", {"fromType": "long", "toType": "integer"}))
    with pytest.raises(UnsupportedFeatureError, match=r"column c .*typeWidening.*long -> integer"):
        check_snapshot_readable(WIDENING, metadata)


def test_a_malformed_change_is_refused_by_column() -> None:
    metadata = metadata_of(changed("c", "long", {"toType": "long"}))
    with pytest.raises(UnsupportedFeatureError, match="column c "):
        check_snapshot_readable(WIDENING, metadata)


def test_widened_tables_are_readable() -> None:
    metadata = metadata_of(changed("c", "long", {"fromType": "integer", "toType": "long"}))
    schema = check_snapshot_readable(WIDENING, metadata)
    assert schema is not None and schema.names == ("c",)
    preview = Protocol(3, 7, ("typeWidening-preview",), ("typeWidening-preview",))
    check_snapshot_readable(preview, metadata)


def field_with(*changes: dict[str, str]) -> StructField:
    return StructField("c", parse_type("double"), True, {"delta.typeChanges": list(changes)})


def test_bounds_are_exact_only_after_integer_and_decimal_histories() -> None:
    assert exact_stats(field_with({"fromType": "integer", "toType": "double"}))
    assert exact_stats(field_with({"fromType": "decimal(5,1)", "toType": "decimal(9,2)"}))
    assert not exact_stats(field_with({"fromType": "float", "toType": "double"}))
    assert not exact_stats(field_with({"fromType": "date", "toType": "timestamp_ntz"}))


def test_integral_sources_name_the_physical_int_width() -> None:
    meta = {
        "delta.typeChanges": [
            {"fromType": "byte", "toType": "decimal(4,1)"},
            {"fromType": "long", "toType": "decimal(22,1)", "fieldPath": "element"},
        ]
    }
    assert integral_sources(meta, "c") == {"": 10, "element": 20}
