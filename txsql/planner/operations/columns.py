"""Column mapping on write: enabling it, RENAME COLUMN and DROP COLUMN[S].

Under column mapping ('name' mode) every field carries a fixed id and a physical name
(``delta.columnMapping.id`` / ``delta.columnMapping.physicalName``); data files, stats and
``partitionValues`` use the physical names, so a rename or a drop only rewrites the schema
in ``metaData``: no data file is touched. Without column mapping the column names ARE the
Parquet names, so Delta refuses both and so do we, with a hint to enable mapping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from txsql.errors import InvalidTablePropertyError, SchemaError, UnsupportedFeatureError
from txsql.log import properties
from txsql.log.actions import Metadata
from txsql.log.schema import MAX_COLUMN_ID, assign_column_mapping, max_column_id
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.sql.command_statements import AlterDropColumns, AlterRenameColumn
from txsql.result import Result
from txsql.txn.transaction import Transaction

MODE_KEY = properties.TableProperties.COLUMN_MAPPING_MODE
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
_ENABLE_HINT = (
    "Enable column mapping first: ALTER TABLE {table} SET TBLPROPERTIES "
    "('delta.columnMapping.mode' = 'name'). It upgrades the table protocol (reader 3 / "
    "writer 7), so readers must support column mapping."
)


def mapping_mode(metadata: Metadata) -> str:
    return properties.column_mapping_mode(metadata.configuration).lower()


def enable_mapping(
    old: Metadata, configuration: dict[str, str], schema_string: str
) -> tuple[dict[str, str], str]:
    """The configuration and schema after SET TBLPROPERTIES, for the mapping mode change.

    none -> name gives every existing field an id and its current name as physical name
    (the data files already use those names) and records ``maxColumnId``. Any other mode
    change is refused: the data files would have to be rewritten.

    Raises:
        InvalidTablePropertyError: a change away from 'name'/'id', or between them.
    """
    before = properties.column_mapping_mode(old.configuration).lower()
    after = properties.column_mapping_mode(configuration).lower()
    if before == after:
        return configuration, schema_string
    if before != "none":
        raise InvalidTablePropertyError(
            f"cannot change delta.columnMapping.mode from '{before}' to '{after}'",
            hint="Column mapping cannot be turned off or switched in place; copy the table "
            "with CREATE TABLE ... AS SELECT to get a table without it.",
        )
    if after != "name":
        raise UnsupportedFeatureError(
            f"txsql cannot enable delta.columnMapping.mode = '{after}'",
            hint="Use 'name' mode: ALTER TABLE t SET TBLPROPERTIES "
            "('delta.columnMapping.mode' = 'name').",
        )
    schema, top = assign_column_mapping(
        json.loads(schema_string),
        max_column_id(json.loads(schema_string), configuration),
        keep_names=True,
    )
    return {**configuration, MAX_COLUMN_ID: str(top)}, _dumps(schema)


def map_new_table(
    schema_json: dict[str, Any], configuration: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """CREATE TABLE under 'name' or 'id' mode: ids from 1 and fresh ``col-<uuid>`` physical
    names (in 'id' mode the data files carry the ids, see txsql.engine.parquet_ids)."""
    if properties.column_mapping_mode(configuration).lower() not in ("name", "id"):
        return schema_json, dict(configuration)
    schema, top = assign_column_mapping(schema_json, 0, keep_names=False)
    return schema, {**configuration, MAX_COLUMN_ID: str(top)}


def map_new_fields(
    metadata: Metadata, fields: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """ADD COLUMNS on a mapped table: new ids above ``maxColumnId``, new physical names."""
    if mapping_mode(metadata) == "none":
        return fields, dict(metadata.configuration)
    current = json.loads(metadata.schema_string)
    start = max_column_id(current, dict(metadata.configuration))
    mapped, top = assign_column_mapping(
        {"type": "struct", "fields": fields}, start, keep_names=False
    )
    return list(mapped["fields"]), {**metadata.configuration, MAX_COLUMN_ID: str(top)}


def run_rename_column(ctx: RunContext, statement: AlterRenameColumn, text: str) -> Result:
    txn, metadata = _begin_mapped(ctx, statement, "RENAME COLUMN")
    schema = json.loads(metadata.schema_string)
    field = find_column(schema, statement.old, statement.target.display)
    new_lower = statement.new.lower()
    if statement.new == field["name"]:
        raise SchemaError(
            f"column {field['name']} is already named {statement.new}",
            hint="Give a different new name.",
        )
    if any(f is not field and f["name"].lower() == new_lower for f in schema["fields"]):
        raise SchemaError(
            f"cannot rename {field['name']} to {statement.new}: "
            f"{statement.target.display} already has a column of that name",
            hint="Pick a name the table does not use (names are case-insensitive).",
        )
    old_name = field["name"]
    refuse_if_referenced(metadata, schema, old_name, "rename", statement.target.display)
    field["name"] = statement.new
    partitions = tuple(
        statement.new if p.lower() == old_name.lower() else p for p in metadata.partition_columns
    )
    configuration = _rename_in_stats_columns(dict(metadata.configuration), old_name, statement.new)
    txn.stage(
        [
            replace(
                metadata,
                schema_string=_dumps(schema),
                partition_columns=partitions,
                configuration=configuration,
            )
        ]
    )
    parameters = {"oldColumnPath": old_name, "newColumnPath": statement.new}
    committed = ctx.commit(txn, "RENAME COLUMN", parameters, {})
    return commit_result(
        text, statement.target.display, "RENAME COLUMN", committed, txn.read_version
    )


def run_drop_columns(ctx: RunContext, statement: AlterDropColumns, text: str) -> Result:
    txn, metadata = _begin_mapped(ctx, statement, "DROP COLUMNS")
    schema = json.loads(metadata.schema_string)
    dropped: list[str] = []
    for name in statement.columns:
        try:
            field = find_column(schema, name, statement.target.display)
        except SchemaError:
            if statement.if_exists:
                continue
            raise
        if field["name"].lower() in {p.lower() for p in metadata.partition_columns}:
            raise SchemaError(
                f"cannot drop partition column {field['name']}",
                hint="Partition columns shape the table's layout; copy the table without it "
                "(CREATE TABLE ... AS SELECT) instead.",
            )
        refuse_if_referenced(metadata, schema, field["name"], "drop", statement.target.display)
        if field["name"] not in dropped:
            dropped.append(field["name"])
    if not dropped:
        # DROP COLUMN IF EXISTS of absent columns: nothing to commit.
        return commit_result(
            text,
            statement.target.display,
            "DROP COLUMNS",
            None,
            None,
            message="no such column; nothing dropped",
        )
    gone = {d.lower() for d in dropped}
    kept = [f for f in schema["fields"] if f["name"].lower() not in gone]
    partitions = {p.lower() for p in metadata.partition_columns}
    if not [f for f in kept if f["name"].lower() not in partitions]:
        raise SchemaError(
            f"cannot drop every data column of {statement.target.display}",
            hint="A Delta table needs at least one non-partition column.",
        )
    schema["fields"] = kept
    configuration = dict(metadata.configuration)
    for name in dropped:
        configuration = _rename_in_stats_columns(configuration, name, None)
    txn.stage([replace(metadata, schema_string=_dumps(schema), configuration=configuration)])
    parameters = {"columns": json.dumps(dropped)}
    committed = ctx.commit(txn, "DROP COLUMNS", parameters, {})
    return commit_result(
        text, statement.target.display, "DROP COLUMNS", committed, txn.read_version
    )


def _begin_mapped(
    ctx: RunContext, statement: AlterRenameColumn | AlterDropColumns, what: str
) -> tuple[Transaction, Metadata]:
    txn, snapshot = ctx.begin_alter(statement.target)
    mode = mapping_mode(snapshot.metadata)
    if mode == "none":
        raise UnsupportedFeatureError(
            f"{what} needs column mapping, which {statement.target.display} does not have: "
            "without it data files hold the columns under their names",
            hint=_ENABLE_HINT.format(table=statement.target.display),
        )
    return txn, snapshot.metadata


def refuse_if_referenced(
    metadata: Metadata, schema: dict[str, Any], column: str, verb: str, table: str
) -> None:
    """CHECK constraints and generation expressions name columns by their logical names:
    renaming or dropping one of those columns would break them (Delta refuses too).

    The match is textual (any identifier spelled like the column), so it may refuse a
    statement Delta would allow, never the other way round.
    """
    pattern = re.compile(rf"(?<![\w`]){re.escape(column)}(?![\w`])|`{re.escape(column)}`", re.I)
    users = [
        f"CHECK constraint {key[len('delta.constraints.') :]}"
        for key, expr in metadata.configuration.items()
        if key.lower().startswith("delta.constraints.") and pattern.search(expr)
    ]
    for f in schema["fields"]:
        expr = (f.get("metadata") or {}).get("delta.generationExpression")
        if isinstance(expr, str) and f["name"] != column and pattern.search(expr):
            users.append(f"generated column {f['name']}")
    if users:
        raise SchemaError(
            f"cannot {verb} column {column} of {table}: {', '.join(users)} uses it",
            hint="Drop the constraint (ALTER TABLE t DROP CONSTRAINT c) or the generated "
            "column first, then add it back with the new expression.",
        )


def find_column(schema: dict[str, Any], name: str, table: str) -> dict[str, Any]:
    fields: list[dict[str, Any]] = schema["fields"]
    for f in fields:
        if f["name"] == name:
            return f
    for f in fields:
        if f["name"].lower() == name.lower():
            return f
    raise SchemaError(
        f"column {name} not found in {table}; it has {', '.join(f['name'] for f in fields)}",
        hint="Check the spelling (DESCRIBE DETAIL shows the schema).",
    )


def _rename_in_stats_columns(
    configuration: dict[str, str], old: str, new: str | None
) -> dict[str, str]:
    """Keep ``delta.dataSkippingStatsColumns`` naming live columns (Delta does the same)."""
    listed = configuration.get(STATS_COLUMNS)
    if not listed:
        return configuration
    out: list[str] = []
    for item in (i.strip() for i in listed.split(",") if i.strip()):
        head, dot, rest = item.partition(".")
        if head.strip("`").lower() == old.lower():
            if new is None:
                continue
            plain = re.fullmatch(r"[A-Za-z_]\w*", new) is not None
            quoted = new if plain else "`" + new.replace("`", "``") + "`"
            item = quoted + dot + rest
        out.append(item)
    if out:
        configuration[STATS_COLUMNS] = ",".join(out)
    else:
        del configuration[STATS_COLUMNS]
    return configuration


def _dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
