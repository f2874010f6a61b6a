"""ALTER TABLE t ALTER COLUMN c TYPE <wider> (and CHANGE COLUMN c c <wider>): type widening.

PROTOCOL.md "Type Widening": with ``delta.enableTypeWidening`` on, a column may take a
wider type (``txsql.log.type_widening.is_allowed``) in a metadata-only commit. The schema
gets the new type and the field's ``delta.typeChanges`` records the change; no data file is
rewritten: readers cast the old files' values up (txsql's scan does, see
``txsql/engine/schema.py``), and new files are written at the wide type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log import iceberg_compat, protocol_upgrade
from txsql.log.schema import DataType, DecimalType, PrimitiveType, parse_type, type_to_json_value
from txsql.log.type_widening import INTEGRAL_DIGITS, TYPE_CHANGES_KEY, is_allowed
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.operations.columns import find_column, refuse_if_referenced
from txsql.planner.sql.command_statements import AlterColumn
from txsql.result import Result

ENABLE_PROPERTY = "delta.enableTypeWidening"
_ALLOWED = (
    "BYTE -> SHORT -> INT -> BIGINT; FLOAT, BYTE, SHORT, INT -> DOUBLE; DATE -> "
    "TIMESTAMP_NTZ; DECIMAL(p, s) -> DECIMAL(p + k1, s + k2) with k1 >= k2 >= 0; integers "
    "-> DECIMAL with room for all their digits"
)


def run_alter_column_type(ctx: RunContext, statement: AlterColumn, text: str) -> Result:
    assert statement.new_type is not None
    txn, snapshot = ctx.begin_alter(statement.target)
    metadata, table = snapshot.metadata, statement.target.display
    schema = json.loads(metadata.schema_string)
    field = find_column(schema, statement.column, table)
    name = field["name"]
    old, new_json = parse_type(field["type"]), _delta_type(ctx, statement.new_type)
    new = parse_type(new_json)
    if old == new:
        raise SchemaError(
            f"{table}.{name} is already of type {statement.new_type}", hint="Nothing to change."
        )
    if not is_allowed(old, new):
        raise SchemaError(
            f"cannot change {table}.{name} from {spelled(old)} to {statement.new_type}: "
            "only widening type changes keep every stored value (Delta allows "
            f"{_ALLOWED})",
            hint="To narrow or convert a column, add a new column with the type you want, "
            "fill it with UPDATE t SET new = CAST(old AS ...), then drop the old one.",
        )
    if not widening_enabled(metadata.configuration):
        raise UnsupportedFeatureError(
            f"cannot widen {table}.{name}: type widening is off for this table",
            hint=f"Turn it on first: ALTER TABLE {table} SET TBLPROPERTIES "
            f"('{ENABLE_PROPERTY}' = 'true'). Readers must then support the typeWidening "
            "table feature.",
        )
    if iceberg_compat.active(metadata.configuration) and not iceberg_allows(old, new):
        raise UnsupportedFeatureError(
            f"cannot change {table}.{name} from {spelled(old)} to {statement.new_type}: "
            "Iceberg V2 has no such type change and the table keeps Iceberg compatibility",
            hint="Iceberg allows INT -> BIGINT, FLOAT -> DOUBLE and a wider decimal "
            "precision at the same scale.",
        )
    refuse_if_referenced(metadata, schema, name, "change the type of", table)
    record_type_change(field, old, new_json)
    new_metadata = replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))
    protocol = protocol_upgrade.upgrade_for_metadata(snapshot.protocol, new_metadata)
    txn.stage([protocol, new_metadata] if protocol != snapshot.protocol else [new_metadata])
    parameters = {"column": name, "change": f"TYPE {statement.new_type}"}
    committed = ctx.commit(txn, "CHANGE COLUMN", parameters, {})
    return commit_result(text, table, "CHANGE COLUMN", committed, txn.read_version)


def record_type_change(field: dict[str, Any], old: DataType, new_json: Any) -> None:
    """Give the schema ``field`` (a top-level column) the type ``new_json``, appending the
    change to its ``delta.typeChanges`` (PROTOCOL.md "Type Change Metadata")."""
    meta = dict(field.get("metadata") or {})
    change = {"fromType": type_to_json_value(old), "toType": new_json}
    meta[TYPE_CHANGES_KEY] = [*meta.get(TYPE_CHANGES_KEY, []), change]
    field["type"], field["metadata"] = new_json, meta


def _delta_type(ctx: RunContext, type_sql: str) -> Any:
    """The Delta schema type (JSON value) of a Spark SQL type spelling; Spark parses it."""
    fields = ctx.spark.sql(f"SELECT CAST(NULL AS {type_sql}) AS c").schema.jsonValue()["fields"]
    return fields[0]["type"]


def widening_enabled(configuration: Mapping[str, str]) -> bool:
    """``delta.enableTypeWidening``: the table accepts new type changes."""
    return configuration.get(ENABLE_PROPERTY, "").strip().lower() == "true"


def spelled(t: DataType) -> str:
    """A type as Delta spells it, upper-cased (``INTEGER``, ``DECIMAL(12,2)``)."""
    value = type_to_json_value(t)
    return value.upper() if isinstance(value, str) else json.dumps(value)


def iceberg_allows(old: DataType, new: DataType) -> bool:
    """Iceberg V2's own type promotions (PROTOCOL.md: no integer -> DOUBLE or DECIMAL, no
    DATE -> TIMESTAMP_NTZ, no decimal scale increase)."""
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale
    a = old.name if isinstance(old, PrimitiveType) else ""
    b = new.name if isinstance(new, PrimitiveType) else ""
    return (a in INTEGRAL_DIGITS and b in INTEGRAL_DIGITS) or (a, b) == ("float", "double")
