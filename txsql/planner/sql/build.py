"""Turn sqlglot expressions into the typed statements of :mod:`txsql.planner.sql.statements`.

One dispatch table, :data:`BUILDERS`, maps each sqlglot node type to its builder; a builder
returns None for a node of its type it does not own (e.g. ``CREATE VIEW``), which makes the
statement unsupported. The hint of that error lists :data:`STATEMENT_NAMES`, the same table
the statement registry is checked against, so it cannot go stale.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from txsql.errors import SqlError, SqlParseError, UnsupportedStatementError
from txsql.planner.sql import commands, ddl, dml, merge
from txsql.planner.sql.delta_nodes import CloneTable as DialectClone
from txsql.planner.sql.delta_nodes import (
    MergeWithEvolution,
    Optimize,
    Reorg,
    ReplaceTable,
    Restore,
    Vacuum,
)
from txsql.planner.sql.dialect import DIALECT, SPARK
from txsql.planner.sql.nodes import (
    column_spec,
    no_time_travel,
    property_key,
    property_value,
    table_node,
    table_ref,
)
from txsql.planner.sql.passthrough import build_passthrough
from txsql.planner.sql.refs import ColumnSpec
from txsql.planner.sql.show import Show
from txsql.planner.sql.statements import (
    STATEMENT_NAMES,
    Begin,
    CloneTable,
    Commit,
    CreateTable,
    CreateView,
    DescribeHistory,
    Explain,
    InsertInto,
    Query,
    Rollback,
    Statement,
)
from txsql.planner.sql.transactions import DecidePreparedNode, PrepareNode, build_prepared

Builder = Callable[[Any], Statement | None]


def supported_statements() -> str:
    """The statements txsql runs, for error hints."""
    return ", ".join(STATEMENT_NAMES.values())


def build_statement(expression: exp.Expr) -> Statement:
    """Build the typed statement for one parsed expression."""
    # The most specific registered node type wins (exp.Select is found through exp.Query).
    for node_type in type(expression).__mro__:
        builder = BUILDERS.get(node_type)
        if builder is not None:
            statement = builder(expression)
            if statement is not None:
                return statement
            break
    passthrough = build_passthrough(expression)
    if passthrough is not None:
        return passthrough
    raise UnsupportedStatementError(
        f"{_kind(expression)} statements are not supported yet",
        hint=f"txsql runs {supported_statements()}.",
    )


def _create(create: exp.Create) -> Statement | None:
    kind = str(create.kind or "").upper()
    if kind in ("SCHEMA", "DATABASE"):
        return ddl.build_create_schema(create)
    if kind == "VIEW":
        return _create_view(create)
    return _create_table(create) if kind == "TABLE" else None


def _alter(alter: exp.Alter) -> Statement | None:
    return ddl.build_rename(alter) or commands.build_command(alter)


def _replace_table(replace: ReplaceTable) -> CreateTable:
    create = replace.this
    if not isinstance(create, exp.Create) or create.kind != "TABLE":
        raise SqlError("REPLACE TABLE needs a table definition", hint=_REPLACE_EXAMPLE)
    return _create_table(create, "REPLACE")


def _clone(clone: DialectClone) -> CloneTable:
    target = no_time_travel(table_ref(table_node(clone.this)), "CREATE TABLE ... CLONE")
    properties = tuple(
        (property_key(p.this), property_value(p.args["value"]))
        for p in clone.args.get("properties") or []
    )
    return CloneTable(
        target=target,
        source=table_ref(table_node(clone.args["source"])),
        replace=str(clone.args.get("replace") or ""),
        if_not_exists=bool(clone.args.get("exists")),
        location=clone.args.get("location"),
        properties=properties,
        shallow=bool(clone.args.get("shallow")),
    )


def _create_view(create: exp.Create) -> CreateView:
    properties = create.args.get("properties")
    temporary = any(
        isinstance(p, exp.TemporaryProperty) for p in (properties.expressions if properties else [])
    )
    if not temporary:
        # A permanent view lives in Spark's metastore, outside txsql: it would pin
        # whatever txsql resolved at creation time.
        raise UnsupportedStatementError(
            "CREATE VIEW (a permanent view) is not supported",
            hint="Use CREATE TEMP VIEW v AS SELECT ...: txsql keeps it in the session and "
            "re-reads the latest version of its tables each time it is queried.",
        )
    query = create.expression
    if not isinstance(query, exp.Query):
        raise SqlError(
            "CREATE TEMP VIEW needs AS SELECT ...", hint="CREATE TEMP VIEW v AS SELECT 1"
        )
    name = create.this
    if isinstance(name, exp.Schema):
        raise UnsupportedStatementError(
            "a column list on CREATE TEMP VIEW is not supported",
            hint="Name the columns in the SELECT with AS instead.",
        )
    if not isinstance(name, exp.Table) or name.args.get("db"):
        raise SqlError("a temp view takes a plain name", hint="CREATE TEMP VIEW v AS SELECT 1")
    return CreateView(
        name=name.name,
        query=query,
        replace=bool(create.args.get("replace")),
        if_not_exists=bool(create.args.get("exists")),
    )


def _insert_any(insert: exp.Insert) -> Statement:
    # INSERT OVERWRITE and INSERT ... REPLACE WHERE are commands; a plain INSERT appends.
    return commands.build_command(insert) or _insert(insert)


def _describe(describe: exp.Describe) -> Statement | None:
    style = describe.args.get("style")
    if style == "DETAIL":
        return commands.build_command(describe)
    if style == "HISTORY":
        limit = describe.args.get("limit")
        if limit is not None and not (isinstance(limit, exp.Literal) and limit.this.isdigit()):
            raise SqlError("DESCRIBE HISTORY LIMIT needs a whole number", hint="e.g. LIMIT 5")
        return DescribeHistory(
            no_time_travel(table_ref(table_node(describe.this)), "DESCRIBE HISTORY"),
            int(limit.this) if limit is not None else None,
        )
    return ddl.build_describe_table(describe)


def _command(command: exp.Command) -> Explain | None:
    return _explain(command) if str(command.this).upper() == "EXPLAIN" else None


# Spark's EXPLAIN modes; txsql shows its own plan whichever is given.
_EXPLAIN_MODES = re.compile(r"^\s*(EXTENDED|FORMATTED|COST|CODEGEN)\b", re.IGNORECASE)


def _explain(command: exp.Command) -> Explain:
    inner = command.expression
    text = inner.name if isinstance(inner, exp.Literal) else (inner.sql(SPARK) if inner else "")
    text = _EXPLAIN_MODES.sub("", text, count=1).strip()
    if not text:
        raise SqlError("EXPLAIN needs a statement", hint="e.g. EXPLAIN DELETE FROM t WHERE id = 1")
    try:
        parsed = sqlglot.parse(text, read=DIALECT)
    except ParseError as e:
        raise SqlParseError(f"syntax error in EXPLAIN: {e.errors[0]['description']}") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise SqlParseError("EXPLAIN takes exactly one statement")
    return Explain(build_statement(parsed[0]), text)


def _create_table(create: exp.Create, replace: str = "") -> CreateTable:
    target = create.this
    if not replace and create.args.get("replace"):
        replace = "CREATE OR REPLACE"
    if replace and create.args.get("exists"):
        raise SqlError(
            f"{replace} TABLE cannot be combined with IF NOT EXISTS",
            hint="Use one of them: CREATE OR REPLACE TABLE t ... or CREATE TABLE IF NOT EXISTS t.",
        )
    columns: tuple[ColumnSpec, ...] = ()
    if isinstance(target, exp.Schema):
        for item in target.expressions:
            if not isinstance(item, exp.ColumnDef):
                raise UnsupportedStatementError(
                    f"table constraint `{item.sql(SPARK)}` is not supported: txsql would "
                    "not enforce it",
                    hint="Remove the constraint; check the rule with a query instead.",
                )
        columns = tuple(column_spec(c) for c in target.expressions)
        target = target.this
    properties = create.args.get("properties")
    partition_columns: tuple[str, ...] = ()
    table_properties: list[tuple[str, str]] = []
    location: str | None = None
    comment: str | None = None
    clustering: tuple[str, ...] = ()
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.PartitionedByProperty):
            partition_columns = tuple(_partition_names(prop.this))
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.FileFormatProperty):
            fmt = prop.this.name.lower()
            if fmt != "delta":
                raise UnsupportedStatementError(
                    f"USING {fmt} is not supported", hint="txsql tables are Delta tables."
                )
        elif isinstance(prop, exp.ClusterProperty):
            clustering = commands.cluster_columns(prop, "CREATE TABLE")
        elif isinstance(prop, exp.Property) and "value" in prop.args:
            table_properties.append((property_key(prop.this), property_value(prop.args["value"])))
        else:
            raise UnsupportedStatementError(
                f"CREATE TABLE option `{prop.sql(SPARK)}` is not supported",
                hint="Supported: PARTITIONED BY, CLUSTER BY, TBLPROPERTIES, LOCATION, COMMENT.",
            )
    if clustering and partition_columns:
        raise UnsupportedStatementError(
            "a table cannot be both partitioned and clustered (PARTITIONED BY with CLUSTER BY)",
            hint="Choose one: liquid clustering (CLUSTER BY) replaces partitioning.",
        )
    if clustering and replace:
        raise UnsupportedStatementError(
            f"{replace} TABLE ... CLUSTER BY is not supported",
            hint="Create the table with CLUSTER BY, or ALTER TABLE t CLUSTER BY (...) after.",
        )
    query = create.expression if isinstance(create.expression, exp.Query) else None
    return CreateTable(
        target=no_time_travel(table_ref(table_node(target)), "CREATE TABLE"),
        columns=columns,
        partition_columns=partition_columns,
        properties=tuple(table_properties),
        location=location,
        if_not_exists=bool(create.args.get("exists")),
        query=query,
        comment=comment,
        replace=replace,
        clustering=clustering,
    )


_REPLACE_EXAMPLE = "e.g. REPLACE TABLE t (id BIGINT) or REPLACE TABLE t AS SELECT ..."


def _partition_names(node: exp.Expr) -> list[str]:
    items = node.expressions if isinstance(node, (exp.Schema, exp.Tuple)) else [node]
    names = []
    for item in items:
        if isinstance(item, (exp.Column, exp.Identifier, exp.ColumnDef)):
            names.append(item.name)
        else:
            raise SqlError(
                f"PARTITIONED BY takes column names, not {item.sql(SPARK)}",
                hint="List existing columns: PARTITIONED BY (col1, col2).",
            )
    return names


def _insert(insert: exp.Insert) -> InsertInto:
    if insert.args.get("overwrite"):
        raise UnsupportedStatementError(
            "INSERT OVERWRITE is not supported yet", hint="Use INSERT INTO to append rows."
        )
    target = insert.this
    columns: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    query = insert.expression
    if query is None:
        raise SqlError("INSERT needs VALUES or a query", hint="INSERT INTO t VALUES (1, 'a')")
    return InsertInto(table_ref(table_node(target)), columns, query)


def _isolation(begin: exp.Transaction) -> str | None:
    for mode in begin.args.get("modes") or []:
        words = str(mode).split()
        if [w.upper() for w in words[:2]] == ["ISOLATION", "LEVEL"] and len(words) > 2:
            return "".join(words[2:])
    return None


def _kind(expression: exp.Expr) -> str:
    if isinstance(expression, exp.Command):
        return str(expression.this).upper()
    return expression.key.upper()


BUILDERS: dict[type[exp.Expr], Builder] = {
    exp.Create: _create,
    ReplaceTable: _replace_table,
    DialectClone: _clone,
    exp.Insert: _insert_any,
    exp.Query: Query,
    exp.Describe: _describe,
    exp.Merge: merge.build_merge,
    MergeWithEvolution: lambda node: replace(merge.build_merge(node.this), schema_evolution=True),
    exp.Delete: dml.build_delete,
    exp.Update: dml.build_update,
    exp.Command: _command,
    exp.Alter: _alter,
    exp.Drop: ddl.build_drop,
    exp.TruncateTable: ddl.build_truncate,
    exp.Use: ddl.build_use,
    Show: ddl.build_show,
    Restore: commands.build_command,
    Optimize: commands.build_command,
    Reorg: commands.build_command,
    Vacuum: commands.build_command,
    exp.Transaction: lambda begin: Begin(_isolation(begin)),
    exp.Commit: lambda _: Commit(),
    exp.Rollback: lambda _: Rollback(),
    PrepareNode: build_prepared,
    DecidePreparedNode: build_prepared,
}
