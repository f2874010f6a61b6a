"""The rules of icebergCompatV2 txsql checks before writing (no Spark needed)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from txsql.errors import UnsupportedFeatureError
from txsql.log import iceberg_compat, properties
from txsql.log.actions import Metadata
from txsql.log.field_ids import field_ids, missing_nested_ids
from txsql.log.schema import parse_schema

MAPPED = {"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name"}


def _field(name: str, type_: Any, fid: int, nested: dict[str, int] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "delta.columnMapping.id": fid,
        "delta.columnMapping.physicalName": f"col-{name}",
    }
    if nested is not None:
        metadata["delta.columnMapping.nested.ids"] = nested
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata}


def _metadata(*fields: dict[str, Any], conf: dict[str, str] | None = None) -> Metadata:
    schema = json.dumps({"type": "struct", "fields": list(fields)})
    return Metadata("id", schema, configuration=MAPPED if conf is None else conf)


ARRAY_OF_MAPS = {
    "type": "array",
    "elementType": {
        "type": "map",
        "keyType": "string",
        "valueType": "long",
        "valueContainsNull": True,
    },
    "containsNull": True,
}


def test_a_valid_table_passes_and_gets_no_dvs() -> None:
    nested = {"col-a.element": 2, "col-a.element.key": 3, "col-a.element.value": 4}
    metadata = _metadata(_field("a", ARRAY_OF_MAPS, 1, nested))
    iceberg_compat.check(metadata)
    assert missing_nested_ids(parse_schema(metadata.schema_string)) == []
    [column] = field_ids(parse_schema(metadata.schema_string))
    [element] = column.children
    assert (column.id, element.id, [c.id for c in element.children]) == (1, 2, [3, 4])
    assert not properties.deletion_vectors_enabled(
        {**MAPPED, "delta.enableDeletionVectors": "true"}
    )


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        (_metadata(_field("a", "long", 1), conf={"delta.enableIcebergCompatV2": "true"}), "'none'"),
        (
            _metadata(
                _field("a", "long", 1), conf={**MAPPED, "delta.enableIcebergCompatV1": "true"}
            ),
            "V1",
        ),
        (_metadata(_field("v", "variant", 1)), "v (variant)"),
        (_metadata(_field("a", ARRAY_OF_MAPS, 1, {"col-a.element": 2})), "col-a.element.key"),
    ],
    ids=["no-column-mapping", "v1-too", "variant", "missing-nested-id"],
)
def test_broken_rules_refused_by_name(metadata: Metadata, named: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match="Iceberg V2") as refused:
        iceberg_compat.check(metadata)
    assert named in refused.value.message and refused.value.hint


def test_replace_keeps_partition_columns() -> None:
    before = replace(
        _metadata(_field("p", "string", 1), _field("q", "long", 2)), partition_columns=("p",)
    )
    iceberg_compat.check(before, before)
    with pytest.raises(UnsupportedFeatureError, match="partition columns"):
        iceberg_compat.check(replace(before, partition_columns=("q",)), before)


def test_inactive_property_checks_nothing() -> None:
    iceberg_compat.check(_metadata(_field("v", "variant", 1), conf={}))
