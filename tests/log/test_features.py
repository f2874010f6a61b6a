"""Protocol checks: what txsql reads, writes and creates."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tests.fixture_paths import find_fixtures
from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log.actions import Metadata, Protocol
from txsql.log.codec import decode_commit
from txsql.log.column_rules import column_rules
from txsql.log.features import (
    READER_FEATURES_SUPPORTED,
    READER_WRITER_FEATURES,
    WRITER_FEATURES_SUPPORTED,
    check_readable,
    check_writable,
    reader_features,
    writer_features,
)
from txsql.log.protocol_upgrade import (
    protocol_for_new_table,
    upgrade_for_metadata,
    upgrade_note,
    with_features,
)

FIXTURES = find_fixtures()
COMMIT_NAME = re.compile(r"\d{20}\.json")
EMPTY_SCHEMA = (
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
)


def _meta(conf: dict[str, str] | None = None, schema: str = EMPTY_SCHEMA) -> Metadata:
    return Metadata("id", schema, configuration=conf or {})


def _latest(table: str) -> tuple[Protocol, Metadata]:
    protocol = metadata = None
    log = FIXTURES / table / "_delta_log"
    for path in sorted(p for p in log.glob("*.json") if COMMIT_NAME.fullmatch(p.name)):
        for action in decode_commit(path.read_bytes()):
            if isinstance(action, Protocol):
                protocol = action
            elif isinstance(action, Metadata):
                metadata = action
    assert protocol is not None and metadata is not None
    return protocol, metadata


ALL_TABLES = sorted(
    str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*") if (p / "_delta_log").is_dir()
)


# Fixtures whose reader features txsql refuses by name (the feature the error names).
REFUSED = {
    "delta-modern/catalog-owned-preview": "catalogManaged",  # a catalog owns its commits
    "delta-modern/table-with-geo": "geospatial",
}


@pytest.mark.parametrize("table", ALL_TABLES)
def test_every_fixture_is_readable_or_refused_by_name(table: str) -> None:
    protocol, _ = _latest(table)
    if table not in REFUSED:
        check_readable(protocol)
        return
    with pytest.raises(UnsupportedFeatureError, match=REFUSED[table]):
        check_readable(protocol)


def test_dv_fixture_protocol_is_readable_and_writable() -> None:
    protocol, metadata = _latest("delta-golden/basic-dv-no-checkpoint")
    assert protocol == Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    check_readable(protocol)
    check_writable(protocol, metadata)


def test_unknown_reader_features_listed_sorted() -> None:
    protocol = Protocol(3, 7, ("zFeature", "deletionVectors", "geospatial"), ())
    with pytest.raises(UnsupportedFeatureError) as info:
        check_readable(protocol)
    message = str(info.value)
    assert "geospatial, zFeature" in message
    assert "deletionVectors" in info.value.hint  # says what txsql supports
    assert "deletionVectors," not in info.value.message


def test_reader_version_too_new() -> None:
    with pytest.raises(UnsupportedFeatureError, match="reader version 4"):
        check_readable(Protocol(4, 7, (), ()))
    with pytest.raises(UnsupportedFeatureError, match="writer version 8"):
        check_writable(Protocol(1, 8), _meta())


def test_legacy_column_mapping_reader_is_readable() -> None:
    check_readable(Protocol(2, 5))
    assert reader_features(Protocol(2, 5)) == {"columnMapping"}


def test_column_mapped_fixture_writable_in_both_modes() -> None:
    protocol, metadata = _latest("delta-golden/dv-with-columnmapping")
    check_readable(protocol)
    check_writable(protocol, metadata)  # 'name' mode: txsql writes physical names
    id_mode = replace(
        metadata, configuration={**metadata.configuration, "delta.columnMapping.mode": "id"}
    )
    check_writable(protocol, id_mode)  # 'id' mode: every field id in the files too


def test_cdf_fixture_writable_with_cdf_enabled() -> None:
    protocol, metadata = _latest("delta-rs/cdf-table-with-cdc-and-dvs")
    check_readable(protocol)
    assert "changeDataFeed" in writer_features(protocol)
    check_writable(protocol, metadata)  # txsql writes change files now
    check_writable(protocol, _meta({"delta.enableChangeDataFeed": "false"}))


def test_cdf_table_refuses_columns_named_like_the_feed() -> None:
    clash = EMPTY_SCHEMA.replace('"name":"id"', '"name":"_Change_Type"')
    conf = {"delta.enableChangeDataFeed": "true"}
    with pytest.raises(SchemaError, match="_change_type"):
        check_writable(Protocol(1, 7, None, ("changeDataFeed",)), Metadata("id", clash, (), conf))
    check_writable(Protocol(1, 2), Metadata("id", clash))  # without CDF the name is free


def test_legacy_writer_versions_depend_on_usage() -> None:
    check_writable(Protocol(1, 4), _meta())
    check_writable(Protocol(1, 4), _meta({"delta.enableChangeDataFeed": "true"}))
    # Constraints and generated columns are enforced by txsql's writes (write_rules).
    check_writable(Protocol(1, 3), _meta({"delta.constraints.positive": "id > 0"}))
    generated = EMPTY_SCHEMA.replace(
        '"metadata":{}', '"metadata":{"delta.generationExpression":"1"}'
    )
    check_writable(Protocol(1, 4), _meta(schema=generated))


def test_unknown_writer_features_refused_even_if_unused() -> None:
    unknown = ("icebergCompatV1", "icebergWriterCompatV1")
    protocol = Protocol(3, 7, ("deletionVectors",), ("deletionVectors", *unknown))
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV1, icebergWriterCompatV1"):
        check_writable(protocol, _meta())


def test_invariants_in_schema_are_writable_and_enforced() -> None:
    invariant = '{\\"expression\\":{\\"expression\\":\\"x > 3\\"}}'
    schema = EMPTY_SCHEMA.replace(
        '"metadata":{}', f'"metadata":{{"delta.invariants":"{invariant}"}}'
    )
    check_writable(Protocol(1, 2), _meta(schema=schema))
    rules = column_rules(_meta(schema=schema))
    assert [(c.expression) for c in rules.checks] == ["x > 3"]


def test_metadata_features_upgrade_the_protocol() -> None:
    constrained = _meta({"delta.constraints.positive": "id > 0"})
    upgraded = upgrade_for_metadata(Protocol(1, 2), constrained)
    assert upgraded == Protocol(1, 7, None, ("appendOnly", "checkConstraints", "invariants"))
    assert upgrade_for_metadata(Protocol(1, 3), constrained) == Protocol(1, 3)
    assert "checkConstraints" in upgrade_note(Protocol(1, 2), upgraded)
    dv = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    grown = upgrade_for_metadata(dv, constrained)
    assert grown.writer_features == ("checkConstraints", "deletionVectors")


def test_supported_sets_are_deliberate() -> None:
    # Widened tables are written at the current (wide) types; shredded VARIANT tables
    # unshredded (always allowed); V2 checkpoints UUID-named.
    for name in ("typeWidening", "typeWidening-preview", "v2Checkpoint", "variantShredding"):
        assert name in READER_FEATURES_SUPPORTED & WRITER_FEATURES_SUPPORTED
    assert "geospatial" not in READER_FEATURES_SUPPORTED | WRITER_FEATURES_SUPPORTED
    assert "variantType" in READER_FEATURES_SUPPORTED & WRITER_FEATURES_SUPPORTED
    assert "columnMapping" in READER_FEATURES_SUPPORTED
    assert "columnMapping" in WRITER_FEATURES_SUPPORTED  # 'name' mode; 'id' is refused
    # Writer-only names never appear in reader lists.
    assert READER_FEATURES_SUPPORTED <= READER_WRITER_FEATURES


def test_protocol_for_new_tables() -> None:
    assert protocol_for_new_table({"delta.enableDeletionVectors": "true"}) == Protocol(
        3, 7, ("deletionVectors",), ("deletionVectors",)
    )
    assert protocol_for_new_table({"delta.enableDeletionVectors": "false"}) == Protocol(1, 2)
    assert protocol_for_new_table({}) == Protocol(1, 2)
    both = protocol_for_new_table(
        {
            "delta.enableDeletionVectors": "true",
            "delta.appendOnly": "true",
            "delta.enableInCommitTimestamps": "true",
        }
    )
    assert both.reader_features == ("deletionVectors",)
    assert both.writer_features == ("appendOnly", "deletionVectors", "inCommitTimestamp")
    mapped = protocol_for_new_table({"delta.columnMapping.mode": "name"})
    assert mapped == Protocol(3, 7, ("columnMapping",), ("columnMapping",))
    explicit = protocol_for_new_table({"delta.feature.domainMetadata": "supported"})
    assert explicit == Protocol(1, 7, None, ("domainMetadata",))


@pytest.mark.parametrize(
    "conf",
    [
        {"delta.feature.icebergCompatV1": "supported"},
        {"delta.feature.icebergWriterCompatV1": "supported"},
    ],
)
def test_new_table_with_unwritable_features_refused(conf: dict[str, str]) -> None:
    with pytest.raises(UnsupportedFeatureError):
        protocol_for_new_table(conf)


def test_row_tracking_property_lists_its_features() -> None:
    # The high-water mark lives in a domain: both features, as Delta Spark lists them.
    wanted = protocol_for_new_table({"delta.enableRowTracking": "true"})
    assert wanted == Protocol(1, 7, None, ("domainMetadata", "rowTracking"))


@pytest.mark.parametrize(
    ("key", "value", "feature"),
    [
        ("delta.enableTypeWidening", "true", "typeWidening"),
        ("delta.checkpointPolicy", "v2", "v2Checkpoint"),
    ],
)
def test_properties_list_their_reader_writer_feature(key: str, value: str, feature: str) -> None:
    assert protocol_for_new_table({key: value}) == Protocol(3, 7, (feature,), (feature,))


def test_iceberg_compat_property_lists_its_writer_feature() -> None:
    # Stored without the feature, the property makes Delta refuse the whole table.
    wanted = protocol_for_new_table(
        {"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name"}
    )
    assert set(wanted.writer_features or ()) == {"icebergCompatV2", "columnMapping"}
    assert protocol_for_new_table({"delta.enableIcebergCompatV2": "false"}) == Protocol(1, 2)


def test_with_features_upgrades_legacy_versions() -> None:
    upgraded = with_features(Protocol(1, 4), writer=["deletionVectors"])
    assert upgraded.min_reader_version == 3 and upgraded.min_writer_version == 7
    assert upgraded.reader_features == ("deletionVectors",)
    # Everything writer 4 implied is listed explicitly.
    assert set(upgraded.writer_features or ()) == {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "deletionVectors",
    }
    legacy_cm = with_features(Protocol(2, 5), reader=["deletionVectors"])
    assert legacy_cm.reader_features == ("columnMapping", "deletionVectors")


def test_with_features_is_idempotent() -> None:
    dv = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    assert with_features(dv, reader=["deletionVectors"]) is dv
    assert with_features(Protocol(1, 2), writer=["appendOnly"]) == Protocol(1, 2)
    grown = with_features(dv, writer=["domainMetadata"])
    assert grown.reader_features == ("deletionVectors",)
    assert grown.writer_features == ("deletionVectors", "domainMetadata")
