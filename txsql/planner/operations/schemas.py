"""CREATE / DROP SCHEMA, USE, SHOW SCHEMAS and SHOW TABLES (Spark's semantics).

A schema (``DATABASE`` is a synonym) is a catalog entry, ``_txsql_catalog/_schemas/
<name>.json``; its managed tables live in ``<warehouse>/<name>.db/<table>`` as in Spark
(or under its LOCATION). ``default`` always exists, keeps ``<warehouse>/<table>`` and
cannot be dropped. USE changes the session's current schema, which unqualified table
names resolve against.

Schema entries are written put-if-absent, so two racing CREATE SCHEMAs create it once.
DROP SCHEMA is not atomic with CREATE TABLE: a table created in the schema while a
DROP SCHEMA ... CASCADE runs can outlive it; its name then fails with SchemaNotFoundError
until the schema is created again (its entry and files are kept, never lost).
"""

from __future__ import annotations

import contextlib
import os
import re

from txsql.errors import SchemaExistsError, SchemaNotEmptyError, SchemaNotFoundError, SqlError
from txsql.planner.catalog import DEFAULT_SCHEMA, check_identifier
from txsql.planner.context import RunContext
from txsql.planner.operations.drop import drop_table, refuse_in_transaction
from txsql.planner.sql.ddl_statements import (
    CreateSchema,
    DropSchema,
    ShowSchemas,
    ShowTables,
    UseSchema,
)
from txsql.planner.sql.refs import TableRef
from txsql.result import Result


def run_create_schema(ctx: RunContext, statement: CreateSchema, text: str) -> Result:
    refuse_in_transaction(ctx, "CREATE SCHEMA")
    name = check_identifier(statement.name, "schema")
    if ctx.catalog.schemas.create(name, statement.comment, statement.location):
        return Result(text, "CREATE SCHEMA", message=f"created schema {name}")
    if statement.if_not_exists:
        return Result(text, "CREATE SCHEMA", message=f"schema {name} already exists; nothing done")
    raise SchemaExistsError(f"schema {name} already exists")


def run_drop_schema(ctx: RunContext, statement: DropSchema, text: str) -> Result:
    """RESTRICT (the default) refuses a schema with tables; CASCADE drops them first."""
    refuse_in_transaction(ctx, "DROP SCHEMA")
    name = check_identifier(statement.name, "schema")
    if name == DEFAULT_SCHEMA:
        raise SqlError(
            "the default schema cannot be dropped", hint="Drop its tables one by one instead."
        )
    if not ctx.catalog.schemas.exists(name):
        if statement.if_exists:
            return Result(text, "DROP SCHEMA", message=f"schema {name} does not exist")
        raise SchemaNotFoundError(f"schema {name} does not exist")
    tables = ctx.catalog.tables(name)
    if tables and not statement.cascade:
        shown = ", ".join(tables[:5]) + (" ..." if len(tables) > 5 else "")
        raise SchemaNotEmptyError(
            f"schema {name} is not empty: it holds {len(tables)} table(s) ({shown})"
        )
    for table in tables:
        drop_table(ctx.catalog, TableRef(name=f"{name}.{table}"))
    location = ctx.catalog.schema(name).location
    ctx.catalog.schemas.drop(name)
    _remove_if_empty(location)
    if ctx.catalog.current_schema == name:
        ctx.catalog.current_schema = DEFAULT_SCHEMA  # as Spark: the session falls back
    dropped = f" and its {len(tables)} table(s)" if tables else ""
    return Result(text, "DROP SCHEMA", message=f"dropped schema {name}{dropped}")


def _remove_if_empty(location: str) -> None:
    # Not there, or not empty (external tables or other files): leave it.
    with contextlib.suppress(OSError):
        os.rmdir(location)


def run_use(ctx: RunContext, statement: UseSchema, text: str) -> Result:
    name = ctx.catalog.schema(statement.name).name  # SchemaNotFoundError
    ctx.catalog.current_schema = name
    return Result(text, "USE", message=f"current schema is {name}")


def run_show_schemas(ctx: RunContext, statement: ShowSchemas, text: str) -> Result:
    names = [n for n in ctx.catalog.schemas.names() if matches(statement.pattern, n)]
    df = ctx.spark.createDataFrame([(n,) for n in names], "namespace STRING")
    return Result(text, "SHOW SCHEMAS", df=df)


def run_show_tables(ctx: RunContext, statement: ShowTables, text: str) -> Result:
    schema = ctx.catalog.schema(statement.schema or ctx.catalog.current_schema).name
    rows = [
        (schema, table, False)
        for table in ctx.catalog.tables(schema)
        if matches(statement.pattern, table)
    ]
    df = ctx.spark.createDataFrame(rows, "namespace STRING, tableName STRING, isTemporary BOOLEAN")
    return Result(text, "SHOW TABLES", df=df)


def matches(pattern: str | None, name: str) -> bool:
    """Spark's SHOW pattern: ``*`` any characters, ``|`` alternatives, case-insensitive.

    >>> matches("sa*|ord*", "Orders"), matches("sa*", "orders")
    (True, False)
    """
    if pattern is None:
        return True
    alternatives = [
        ".*".join(re.escape(part) for part in alt.strip().split("*")) for alt in pattern.split("|")
    ]
    return re.fullmatch("|".join(alternatives), name, re.IGNORECASE) is not None
