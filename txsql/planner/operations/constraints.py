"""ALTER TABLE ... ADD/DROP CONSTRAINT and ALTER COLUMN ... SET/DROP NOT NULL|DEFAULT.

Metadata-only commits, as Delta Spark makes them (PROTOCOL.md "CHECK Constraints", "Column
Invariants", "Default Columns"). ADD CONSTRAINT and SET NOT NULL first check every current
row in one Spark job and refuse (table unchanged) if any row breaks the new rule; the scan
is recorded as a read of the whole table, so a concurrent append fails this commit instead
of slipping in unchecked rows, and this commit's metadata change fails concurrent writers. A
rule that needs a writer feature the protocol lacks upgrades the protocol in the same
commit, and the result says so. Later writes enforce the rules
(:mod:`txsql.engine.write_rules`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from txsql.engine.scan import scan_snapshot
from txsql.errors import ConstraintDefinitionError, SchemaError
from txsql.log import column_rules, protocol_upgrade
from txsql.log.actions import Action, Metadata
from txsql.log.predicates import TRUE
from txsql.planner.context import RunContext
from txsql.planner.dml.column_defs import check_default, require_defaults_feature
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.operations.column_types import run_alter_column_type
from txsql.planner.sql.command_statements import (
    AlterAddConstraint,
    AlterColumn,
    AlterDropConstraint,
)
from txsql.result import Result

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from txsql.log.snapshot import Snapshot
    from txsql.txn.transaction import Transaction

_SHOWN_ROW_CHARS = 300


def run_add_constraint(ctx: RunContext, statement: AlterAddConstraint, text: str) -> Result:
    txn, snapshot = ctx.begin_alter(statement.target)
    metadata = snapshot.metadata
    table = statement.target.display
    key = column_rules.constraint_key(statement.name)
    if key in {k.lower() for k in metadata.configuration}:
        raise ConstraintDefinitionError(
            f"constraint {statement.name.lower()} already exists on {table}",
            hint=f"Drop it first (ALTER TABLE {table} DROP CONSTRAINT {statement.name}) or "
            "pick another name.",
        )

    rows = _current_rows(ctx, txn, snapshot)
    condition = _boolean(rows, statement.expression, f"CHECK constraint {statement.name}")
    _refuse_violations(
        rows,
        ~F.coalesce(condition, F.lit(False)),
        f"CHECK constraint {statement.name.lower()} ({statement.expression})",
        table,
    )
    configuration = {**metadata.configuration, key: statement.expression}
    parameters = {"name": statement.name.lower(), "expr": statement.expression}
    return _commit(
        ctx, txn, snapshot, replace(metadata, configuration=configuration), "ADD CONSTRAINT",
        parameters, text, table,
    )  # fmt: skip


def run_drop_constraint(ctx: RunContext, statement: AlterDropConstraint, text: str) -> Result:
    txn, snapshot = ctx.begin_alter(statement.target)
    metadata = snapshot.metadata
    table = statement.target.display
    key = column_rules.constraint_key(statement.name)
    present = next((k for k in metadata.configuration if k.lower() == key), None)
    if present is None:
        if statement.if_exists:
            return Result(
                text,
                "DROP CONSTRAINT",
                version=snapshot.version,
                table=table,
                message=f"{table} has no constraint {statement.name.lower()}; nothing done",
            )
        names = ", ".join(sorted(column_rules.check_constraints(metadata.configuration)))
        raise ConstraintDefinitionError(
            f"{table} has no constraint {statement.name.lower()}",
            hint=(f"Its constraints are {names}. " if names else "It has no constraints. ")
            + "Use DROP CONSTRAINT IF EXISTS to ignore a missing one.",
        )
    configuration = {k: v for k, v in metadata.configuration.items() if k != present}
    parameters = {
        "name": statement.name.lower(),
        "expr": metadata.configuration[present],
        "existed": "true",
    }
    return _commit(
        ctx, txn, snapshot, replace(metadata, configuration=configuration), "DROP CONSTRAINT",
        parameters, text, table,
    )  # fmt: skip


def run_alter_column(ctx: RunContext, statement: AlterColumn, text: str) -> Result:
    if statement.new_type is not None:
        return run_alter_column_type(ctx, statement, text)
    txn, snapshot = ctx.begin_alter(statement.target)
    metadata = snapshot.metadata
    table = statement.target.display
    field = _field(metadata, statement.column, table)
    name = field["name"]
    if statement.nullable is False:
        rows = _current_rows(ctx, txn, snapshot)
        _refuse_violations(rows, F.col(_quote(name)).isNull(), f"NOT NULL on {name}", table)
        new = column_rules.with_field_metadata(metadata, name, table, nullable=False)
        return _commit(
            ctx, txn, snapshot, new, "CHANGE COLUMN", _column_parameters(name, "SET NOT NULL"),
            text, table,
        )  # fmt: skip
    if statement.nullable is True:
        new = column_rules.with_field_metadata(metadata, name, table, nullable=True)
        return _commit(
            ctx, txn, snapshot, new, "CHANGE COLUMN", _column_parameters(name, "DROP NOT NULL"),
            text, table,
        )  # fmt: skip
    if statement.drop_default:
        new = column_rules.with_field_metadata(
            metadata, name, table, drop_keys=(column_rules.DEFAULT_KEY,)
        )
        return _commit(
            ctx, txn, snapshot, new, "CHANGE COLUMN", _column_parameters(name, "DROP DEFAULT"),
            text, table,
        )  # fmt: skip
    assert statement.default is not None
    meta = field.get("metadata") or {}
    if column_rules.GENERATION_KEY in meta or column_rules.identity_of(name, meta):
        raise ConstraintDefinitionError(
            f"{table}.{name} is a generated or identity column; it cannot have a default",
            hint="Its value is always computed; set defaults on ordinary columns.",
        )
    require_defaults_feature(snapshot.protocol, table)
    check_default(ctx, snapshot.schema_json, name, statement.default)
    new = column_rules.with_field_metadata(
        metadata, name, table, set_keys={column_rules.DEFAULT_KEY: statement.default}
    )
    parameters = _column_parameters(name, f"SET DEFAULT {statement.default}")
    return _commit(ctx, txn, snapshot, new, "CHANGE COLUMN", parameters, text, table)


# --- helpers -------------------------------------------------------------------------------


def _field(metadata: Metadata, column: str, table: str) -> dict[str, Any]:
    for field in json.loads(metadata.schema_string)["fields"]:
        if field["name"].lower() == column.lower():
            result: dict[str, Any] = field
            return result
    raise SchemaError(f"{table} has no column {column}", hint="See DESCRIBE DETAIL / SELECT *.")


def _current_rows(ctx: RunContext, txn: Transaction, snapshot: Snapshot) -> DataFrame:
    # Every current row is read: a concurrent append or rewrite then fails our commit.
    txn.record_scan(TRUE, list(snapshot.files))
    return scan_snapshot(ctx.spark, snapshot)


def _boolean(rows: DataFrame, sql: str, what: str) -> Column:
    try:
        condition = F.expr(sql)
        kind = rows.select(condition.alias("c")).schema[0].dataType
    except Exception as exc:
        raise ConstraintDefinitionError(
            f"{what} `{sql}` does not apply to the table: {_first_line(exc)}",
            hint="Write a boolean SQL expression over the table's columns, e.g. CHECK (x > 0).",
        ) from exc
    if not isinstance(kind, BooleanType):
        raise ConstraintDefinitionError(
            f"{what} `{sql}` is of type {kind.simpleString()}, not boolean",
            hint="Compare values: CHECK (x > 0), CHECK (name IS NOT NULL).",
        )
    return condition


def _refuse_violations(rows: DataFrame, violation: Column, rule: str, table: str) -> None:
    """One Spark job: count the rows breaking ``rule`` and fetch one of them."""

    shown = F.substring(F.to_json(F.struct(*[F.col(_quote(c)) for c in rows.columns])), 1,
                        _SHOWN_ROW_CHARS)  # fmt: skip
    summary = rows.agg(
        F.count(F.when(violation, 1)).alias("n"),
        F.first(F.when(violation, shown), ignorenulls=True).alias("row"),
    ).collect()[0]
    if summary["n"]:
        raise ConstraintDefinitionError(
            f"{summary['n']} row(s) of {table} break {rule}, e.g. {summary['row']}; "
            "the table is unchanged",
            hint="Fix or delete those rows first (UPDATE/DELETE), then add the rule again.",
        )


def _commit(
    ctx: RunContext,
    txn: Transaction,
    snapshot: Snapshot,
    metadata: Metadata,
    operation: str,
    parameters: dict[str, Any],
    text: str,
    table: str,
) -> Result:
    protocol = protocol_upgrade.upgrade_for_metadata(snapshot.protocol, metadata)
    actions: list[Action] = [metadata]
    note = protocol_upgrade.upgrade_note(snapshot.protocol, protocol)
    if protocol != snapshot.protocol:
        actions.insert(0, protocol)
    txn.stage(actions)
    committed = ctx.commit(txn, operation, parameters, {})
    return commit_result(
        text, table, operation, committed, txn.read_version, message=note and note + "."
    )


def _column_parameters(column: str, change: str) -> dict[str, Any]:
    return {"column": column, "change": change}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
