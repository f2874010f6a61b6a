"""Column types and the table features they need; types txsql refuses to store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.actions import Metadata, Protocol
from txsql.log.features import check_snapshot_readable, check_writable
from txsql.log.protocol_upgrade import upgrade_for_metadata, upgrade_note
from txsql.log.schema import parse_schema
from txsql.log.type_features import check_storable, needed_features


def field(name: str, type_: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


def schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


NTZ_PLACES = {
    "top level": field("t", "timestamp_ntz"),
    "struct field": field("s", struct(field("a", "integer"), field("t", "timestamp_ntz"))),
    "array element": field(
        "a", {"type": "array", "elementType": "timestamp_ntz", "containsNull": True}
    ),
    "map key": field(
        "m",
        {
            "type": "map",
            "keyType": "timestamp_ntz",
            "valueType": "string",
            "valueContainsNull": True,
        },
    ),
    "map value in array of structs": field(
        "x",
        {
            "type": "array",
            "elementType": struct(
                field(
                    "m",
                    {
                        "type": "map",
                        "keyType": "string",
                        "valueType": "timestamp_ntz",
                        "valueContainsNull": True,
                    },
                )
            ),
            "containsNull": True,
        },
    ),
}


@pytest.mark.parametrize("place", list(NTZ_PLACES))
def test_timestamp_ntz_anywhere_needs_its_feature(place: str) -> None:
    metadata = Metadata("id", schema(field("id", "long"), NTZ_PLACES[place]))
    assert set(needed_features(parse_schema(metadata.schema_string))) == {"timestampNtz"}
    with pytest.raises(UnsupportedFeatureError, match="'timestampNtz' table feature") as info:
        check_writable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), metadata)
    assert "delta.feature.timestampNtz" in (info.value.hint or "")
    upgraded = upgrade_for_metadata(Protocol(1, 2), metadata)
    # A reader-writer feature: both lists, and the legacy features stay listed.
    assert upgraded == Protocol(
        3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz")
    )
    check_writable(upgraded, metadata)
    assert "timestampNtz" in upgrade_note(Protocol(1, 2), upgraded)


def test_plain_types_need_nothing() -> None:
    metadata = Metadata("id", schema(field("t", "timestamp"), field("d", "decimal(38,18)")))
    assert upgrade_for_metadata(Protocol(1, 2), metadata) == Protocol(1, 2)


@pytest.mark.parametrize(
    ("type_", "metadata", "error", "words"),
    [
        ("interval day to second", None, SchemaError, "INTERVAL DAY TO SECOND"),
        ("void", None, SchemaError, "VOID"),
    ],
)
def test_types_txsql_cannot_store_are_refused_by_name(
    type_: Any, metadata: dict[str, Any] | None, error: type[Exception], words: str
) -> None:
    parsed = parse_schema(schema(field("c", type_, metadata)))
    with pytest.raises(error, match=words):
        check_storable(parsed)
    with pytest.raises(error, match=words):
        check_writable(Protocol(3, 7, (), ()), Metadata("id", schema(field("c", type_, metadata))))


def test_collated_strings_need_the_collations_feature() -> None:
    collated = Metadata("id", schema(field("c", "string", {"__COLLATIONS": {"c": "icu.UNICODE"}})))
    with pytest.raises(UnsupportedFeatureError, match="collations"):
        check_writable(Protocol(3, 7, (), ()), collated)
    upgraded = upgrade_for_metadata(Protocol(1, 2), collated)
    assert {"collations", "domainMetadata"} <= set(upgraded.writer_features or ())
    assert not upgraded.reader_features  # a writer-only feature
    check_writable(upgraded, collated)
    preview = Protocol(1, 7, None, ("collations-preview", "domainMetadata"))
    assert upgrade_for_metadata(preview, collated) == preview  # the preview name is kept
    check_writable(preview, collated)


def test_a_void_column_the_table_has_is_kept_a_new_one_refused() -> None:
    had = Metadata("id", schema(field("id", "long"), field("nothing", "void")))
    check_writable(Protocol(1, 2), had, existing=had)
    nested = Metadata("id", schema(field("s", struct(field("v", "void")))))
    for new, existing in ((had, None), (had, Metadata("id", schema(field("id", "long")))),
                          (nested, nested)):  # fmt: skip
        with pytest.raises(SchemaError, match="VOID"):
            check_writable(Protocol(1, 2), new, existing=existing)


def test_type_changes_need_type_widening_listed_under_either_name() -> None:
    changed = field("c", "long", {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]})
    metadata = Metadata("id", schema(changed))
    assert set(needed_features(parse_schema(metadata.schema_string))) == {"typeWidening"}
    check_writable(upgrade_for_metadata(Protocol(1, 2), metadata), metadata)
    preview = ("typeWidening-preview",)
    check_writable(Protocol(3, 7, preview, preview), metadata)
    with pytest.raises(UnsupportedFeatureError, match="typeWidening"):
        check_writable(Protocol(3, 7, (), ()), metadata)


def test_geospatial_columns_are_refused_by_column_and_feature() -> None:
    geo = Protocol(3, 7, ("geospatial",), ("geospatial",))
    metadata = Metadata("id", schema(field("id", "long"), field("g", "geography(OGC:CRS84, x)")))
    with pytest.raises(UnsupportedFeatureError, match=r"column g .*geospatial"):
        check_snapshot_readable(geo, metadata)


@pytest.mark.parametrize("collation", ["UTF8_LCASE", "spark", "acme.UTF8_LCASE", "a.b.c.d", 7])
def test_unmappable_collations_are_refused_by_column(collation: Any) -> None:
    metadata = Metadata("id", schema(field("s", "string", {"__COLLATIONS": {"s": collation}})))
    with pytest.raises(SchemaError, match="column s has a collation"):
        check_snapshot_readable(Protocol(1, 7, None, ("collations",)), metadata)


def test_collated_tables_are_readable_with_versioned_ids() -> None:
    collated = field("s", "string", {"__COLLATIONS": {"s": "icu.en_US.72"}})
    check_snapshot_readable(Protocol(1, 7, None, ("collations",)), Metadata("id", schema(collated)))


@pytest.mark.parametrize("feature", ["variantType", "variantType-preview"])
def test_variant_columns_are_writable_under_either_feature_name(feature: str) -> None:
    nested = field("s", struct(field("v", "variant")))
    metadata = Metadata("id", schema(field("id", "long"), nested))
    protocol = Protocol(3, 7, (feature,), (feature,))
    check_snapshot_readable(protocol, metadata)
    check_writable(protocol, metadata)
    with pytest.raises(UnsupportedFeatureError, match=r"s\.v \(VARIANT\).*variantType"):
        check_writable(Protocol(3, 7, (), ()), metadata)
    assert set(upgrade_for_metadata(Protocol(1, 2), metadata).reader_features or ()) == {
        "variantType"
    }
