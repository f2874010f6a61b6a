"""Typed statements for DROP / TRUNCATE / RENAME, schemas, USE, SHOW and DESCRIBE TABLE.

Each builder is registered in :data:`txsql.planner.sql.build.BUILDERS` (directly or through
the builder of a node type it shares, e.g. ``exp.Create``); the runners live in
:mod:`txsql.planner.operations` (``drop``, ``truncate``, ``rename``, ``schemas``,
``describe_table``, ``show_create``).
"""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.ddl_statements import (
    CreateSchema,
    DdlStatement,
    DescribeTable,
    DropSchema,
    DropTable,
    RenameTable,
    ShowColumns,
    ShowCreateTable,
    ShowSchemas,
    ShowTables,
    ShowTblProperties,
    TruncateTable,
    UseSchema,
)
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import no_time_travel, table_ref
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.show import Show
from txsql.planner.sql.transactions import ShowTransactions

_SCHEMA_KINDS = ("SCHEMA", "DATABASE")


def _named_table(node: exp.Expr | None, statement: str) -> TableRef:
    if not isinstance(node, exp.Table) or not node.name:
        raise SqlError(f"{statement} needs a table name", hint=f"e.g. {statement} sales.orders")
    return no_time_travel(table_ref(node), statement)


def _schema_name(node: exp.Expr | None, statement: str) -> str:
    """The schema a ``CREATE/DROP SCHEMA s`` or ``USE s`` names (sqlglot puts it in a Table)."""
    if isinstance(node, exp.Table) and len(node.parts) == 1:
        return node.parts[0].name
    if isinstance(node, exp.Identifier):
        return node.name
    shown = node.sql(SPARK) if node is not None else ""
    raise SqlError(
        f"{statement} needs one schema name, not {shown!r}",
        hint=f"Schemas are one level deep here: e.g. {statement} sales",
    )


def build_create_schema(create: exp.Create) -> CreateSchema:
    if create.args.get("replace"):
        raise UnsupportedStatementError(
            "CREATE OR REPLACE SCHEMA is not supported", hint="Use CREATE SCHEMA IF NOT EXISTS."
        )
    comment: str | None = None
    location: str | None = None
    properties = create.args.get("properties")
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
        else:
            raise UnsupportedStatementError(
                f"CREATE SCHEMA option `{prop.sql(SPARK)}` is not supported",
                hint="Supported: COMMENT and LOCATION.",
            )
    return CreateSchema(
        _schema_name(create.this, "CREATE SCHEMA"),
        bool(create.args.get("exists")),
        comment,
        location,
    )


def build_drop(drop: exp.Drop) -> DdlStatement | None:
    kind = str(drop.args.get("kind") or "").upper()
    tables = drop.args.get("tables") or []
    if kind in _SCHEMA_KINDS:
        if len(tables) != 1:
            raise SqlError("DROP SCHEMA takes one schema name", hint="DROP SCHEMA s")
        return DropSchema(
            _schema_name(tables[0], "DROP SCHEMA"),
            bool(drop.args.get("exists")),
            bool(drop.args.get("cascade")),
        )
    if kind != "TABLE":
        return None
    if len(tables) != 1:
        raise SqlError("DROP TABLE takes one table", hint="Run one DROP TABLE per table.")
    if drop.args.get("purge"):
        raise UnsupportedStatementError(
            "DROP TABLE ... PURGE is not supported",
            hint="DROP TABLE already deletes a managed table's files; drop PURGE.",
        )
    ref = _named_table(tables[0], "DROP TABLE")
    if ref.path is not None:
        # Spark refuses it too: a path table has no catalog entry to drop.
        raise UnsupportedStatementError(
            f"DROP TABLE cannot drop the path table {ref.display}",
            hint="A path table is not in the catalog: delete its directory with your file "
            "tools, or empty it with TRUNCATE TABLE / DELETE FROM (history kept).",
        )
    return DropTable(ref, bool(drop.args.get("exists")))


def build_truncate(truncate: exp.TruncateTable) -> TruncateTable:
    tables = truncate.expressions or []
    if truncate.args.get("is_database") or len(tables) != 1:
        raise SqlError("TRUNCATE TABLE takes one table", hint="TRUNCATE TABLE t")
    if truncate.args.get("partition") is not None:
        raise UnsupportedStatementError(
            "TRUNCATE TABLE ... PARTITION is not supported by Delta tables",
            hint="Use DELETE FROM t WHERE <partition column> = <value>.",
        )
    return TruncateTable(_named_table(tables[0], "TRUNCATE TABLE"))


def build_rename(alter: exp.Alter) -> RenameTable | None:
    """``ALTER TABLE t RENAME TO u``; None for any other ALTER (commands.py owns those)."""
    actions = alter.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.AlterRename):
        return None
    if str(alter.args.get("kind")).upper() != "TABLE":
        return None
    old = _named_table(alter.this, "ALTER TABLE")
    new = _named_table(actions[0].this, "RENAME TO")
    if old.path is not None or new.path is not None:
        raise UnsupportedStatementError(
            "ALTER TABLE ... RENAME TO works on catalog names, not paths",
            hint="Register the path under a name with CREATE TABLE name LOCATION '/path'.",
        )
    return RenameTable(old, new)


def build_use(use: exp.Use) -> UseSchema:
    kind = use.args.get("kind")
    if kind is not None and kind.name.upper() not in _SCHEMA_KINDS:
        raise UnsupportedStatementError(
            f"USE {kind.name.upper()} is not supported", hint="USE [SCHEMA|DATABASE] s"
        )
    return UseSchema(_schema_name(use.this, "USE"))


def build_show(show: Show) -> DdlStatement | ShowTransactions:
    kind = show.args["kind"]
    schema = show.args.get("schema")
    schema_name = schema.name if schema is not None else None
    if kind == "SCHEMAS":
        return ShowSchemas(show.args.get("pattern"))
    if kind == "TABLES":
        return ShowTables(schema_name, show.args.get("pattern"))
    if kind == "TRANSACTIONS":
        limit = show.args.get("limit")
        return ShowTransactions(int(limit.name)) if limit is not None else ShowTransactions()
    ref = _named_table(show.this, f"SHOW {kind}")
    if kind == "TBLPROPERTIES":
        key = show.args.get("key")
        if isinstance(key, exp.Column):
            return ShowTblProperties(ref, ".".join(part.name for part in key.parts))
        return ShowTblProperties(ref, key.name if key is not None else None)
    if kind == "COLUMNS":
        if schema_name is not None:
            if ref.name is None or "." in ref.name:
                raise SqlError(
                    "SHOW COLUMNS names the schema twice",
                    hint="Write SHOW COLUMNS IN s.t or SHOW COLUMNS IN t IN s.",
                )
            ref = TableRef(name=f"{schema_name}.{ref.name}")
        return ShowColumns(ref)
    return ShowCreateTable(ref)


def build_describe_table(describe: exp.Describe) -> DescribeTable | None:
    """``DESCRIBE [TABLE] [EXTENDED|FORMATTED] t``; None for other DESCRIBE kinds."""
    kind = str(describe.args.get("kind") or "TABLE").upper()
    style = describe.args.get("style")
    if kind != "TABLE" or style not in (None, "EXTENDED", "FORMATTED"):
        return None
    if describe.args.get("partition") is not None:
        raise UnsupportedStatementError(
            "DESCRIBE ... PARTITION is not supported", hint="DESCRIBE DETAIL t lists partitions."
        )
    if not isinstance(describe.this, exp.Table):
        return None
    return DescribeTable(_named_table(describe.this, "DESCRIBE"), style is not None)
