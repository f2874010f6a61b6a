"""Column rules read from and written to Delta metadata (no Spark)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from txsql.errors import SchemaError
from txsql.log.actions import Metadata
from txsql.log.column_rules import (
    IDENTITY_HWM,
    column_rules,
    constraint_key,
    features_used,
    with_field_metadata,
    with_high_water_marks,
)


def _meta(fields: list[dict[str, Any]], conf: dict[str, str] | None = None) -> Metadata:
    schema = json.dumps({"type": "struct", "fields": fields})
    return Metadata("id", schema, configuration=conf or {})


def _field(name: str, meta: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": "long",
        "nullable": kw.get("nullable", True),
        "metadata": meta or {},
    }


IDENTITY = {
    "delta.identity.start": 10,
    "delta.identity.step": -5,
    "delta.identity.allowExplicitInsert": False,
}


def test_rules_cover_every_kind_and_the_features_they_need() -> None:
    nested = {
        "name": "s",
        "type": {"type": "struct", "fields": [_field("inner", nullable=False)]},
        "nullable": True,
        "metadata": {},
    }
    metadata = _meta(
        [
            _field("id", IDENTITY),
            _field("a", nullable=False),
            _field("g", {"delta.generationExpression": "a + 1"}),
            _field("d", {"CURRENT_DEFAULT": "7"}),
            nested,
        ],
        {constraint_key("Pos"): "a > 0"},
    )
    rules = column_rules(metadata)
    assert [(c.name, c.expression) for c in rules.checks] == [("pos", "a > 0")]
    assert rules.not_null == (("a",), ("s", "inner"))
    assert rules.generated == (("g", "a + 1"),) and rules.defaults == (("d", "7"),)
    (identity,) = rules.identity
    assert (identity.start, identity.step, identity.allow_explicit) == (10, -5, False)
    assert identity.next_value() == 10
    assert features_used(metadata) == {
        "checkConstraints",
        "invariants",
        "generatedColumns",
        "identityColumns",
        "allowColumnDefaults",
    }
    assert features_used(_meta([_field("x")])) == frozenset()


def test_incomplete_or_zero_step_identity_is_refused() -> None:
    with pytest.raises(SchemaError, match="incomplete"):
        column_rules(_meta([_field("id", {"delta.identity.start": 1})]))
    with pytest.raises(SchemaError, match="step 0"):
        column_rules(_meta([_field("id", {**IDENTITY, "delta.identity.step": 0})]))


def test_high_water_marks_only_move_forward_in_the_step_direction() -> None:
    metadata = _meta([_field("id", IDENTITY), _field("x")])
    moved = with_high_water_marks(metadata, {"id": 0})
    assert column_rules(moved).identity[0].high_water_mark == 0
    assert column_rules(moved).identity[0].next_value() == -5
    # A larger value is "behind" a negative step: ignored, as is an unknown column.
    again = with_high_water_marks(moved, {"id": 5, "x": 3})
    assert column_rules(again).identity[0].high_water_mark == 0
    assert IDENTITY_HWM not in json.loads(again.schema_string)["fields"][1]["metadata"]


def test_field_metadata_edits_touch_one_column() -> None:
    metadata = _meta([_field("a", {"comment": "c"}), _field("b")])
    edited = with_field_metadata(
        metadata, "A", "t", set_keys={"CURRENT_DEFAULT": "1"}, nullable=False
    )
    fields = json.loads(edited.schema_string)["fields"]
    assert fields[0] == {
        "name": "a",
        "type": "long",
        "nullable": False,
        "metadata": {"comment": "c", "CURRENT_DEFAULT": "1"},
    }
    assert fields[1] == _field("b")
    dropped = with_field_metadata(edited, "a", "t", drop_keys=("CURRENT_DEFAULT",))
    assert json.loads(dropped.schema_string)["fields"][0]["metadata"] == {"comment": "c"}
    with pytest.raises(SchemaError, match="no column z"):
        with_field_metadata(metadata, "z", "t", nullable=True)
