"""Typed statements for overwrites, ALTER TABLE, DESCRIBE DETAIL, RESTORE, OPTIMIZE, VACUUM.

:func:`build_command` is registered in :data:`txsql.planner.sql.build.BUILDERS` for these
node types; it returns None for anything it does not own. The runners live in
:mod:`txsql.planner.operations` (``overwrite``, ``alter``, ``describe``, ``restore``,
``optimize``, ``vacuum``).
"""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.command_statements import (
    AlterAddColumns,
    AlterClusterBy,
    AlterDropColumns,
    AlterRenameColumn,
    AlterSetProperties,
    AlterUnsetProperties,
    CommandStatement,
    DescribeDetail,
    InsertOverwrite,
    OptimizeTable,
    RestoreTable,
    VacuumTable,
)
from txsql.planner.sql.constraints import build_constraint_action
from txsql.planner.sql.delta_nodes import Optimize, Reorg, Restore, UnsetTableProperties, Vacuum
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import column_spec, property_key, property_value, table_ref
from txsql.planner.sql.refs import TableRef


def build_command(expression: exp.Expr) -> CommandStatement | None:
    """The statement for ``expression`` if it is one of this module's, else None."""
    if isinstance(expression, exp.Insert):
        return _insert_overwrite(expression)
    if isinstance(expression, exp.Alter) and str(expression.args.get("kind")).upper() == "TABLE":
        return _alter(expression)
    if isinstance(expression, exp.Describe) and expression.args.get("style") == "DETAIL":
        return DescribeDetail(_target(expression.this, "DESCRIBE DETAIL"))
    if isinstance(expression, Restore):
        return _restore(expression)
    if isinstance(expression, Optimize):
        zorder = expression.args.get("zorder")
        columns = tuple(_column_name(c, "ZORDER BY") for c in zorder.expressions) if zorder else ()
        where = expression.args.get("where")
        return OptimizeTable(
            _target(expression.this, "OPTIMIZE"),
            where.this if where else None,
            columns,
            full=bool(expression.args.get("full")),
        )
    if isinstance(expression, Reorg):
        where = expression.args.get("where")
        return OptimizeTable(
            _target(expression.this, "REORG"), where.this if where else None, purge=True
        )
    if isinstance(expression, Vacuum):
        retain = expression.args.get("retain")
        hours = float(retain.this) if isinstance(retain, exp.Literal) else None
        if hours is not None and hours < 0:
            raise SqlError("RETAIN needs a non-negative number of hours", hint="RETAIN 168 HOURS")
        return VacuumTable(
            _target(expression.this, "VACUUM"), hours, bool(expression.args.get("dry_run"))
        )
    return None


def _target(node: exp.Expr | None, statement: str) -> TableRef:
    if not isinstance(node, exp.Table):
        raise SqlError(f"{statement} needs a table name", hint="Name a table or use delta.`/path`.")
    ref = table_ref(node)
    if ref.version is not None or ref.timestamp is not None:
        raise SqlError(
            f"{statement} cannot run on a time-travel reference",
            hint="Name the table itself (no VERSION/TIMESTAMP AS OF).",
        )
    return ref


def _column_name(node: exp.Expr, clause: str) -> str:
    if isinstance(node, (exp.Column, exp.Identifier)) and not (
        isinstance(node, exp.Column) and node.table
    ):
        return node.name
    raise SqlError(f"{clause} takes column names, not {node.sql(SPARK)}", hint="e.g. (a, b)")


def _insert_overwrite(insert: exp.Insert) -> InsertOverwrite | None:
    overwrite = bool(insert.args.get("overwrite"))
    where = insert.args.get("where")
    if not overwrite and where is None:
        return None  # a plain INSERT INTO: operations/writes.py appends
    if overwrite and where is not None:
        raise SqlError(
            "INSERT OVERWRITE cannot have REPLACE WHERE",
            hint="Use INSERT INTO t REPLACE WHERE cond SELECT ...",
        )
    target = insert.this
    columns: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        raise SqlError("expected a table name", hint="Name a table or use delta.`/path`.")
    partition = None
    spec = target.args.get("partition")
    if spec is not None:
        if not overwrite:
            raise SqlError(
                "PARTITION needs INSERT OVERWRITE", hint="INSERT OVERWRITE t PARTITION (p = 1) ..."
            )
        partition = tuple(_partition_item(item) for item in spec.expressions)
        target = target.copy()
        target.set("partition", None)
    query = insert.expression
    if query is None:
        raise SqlError("INSERT needs VALUES or a query", hint="INSERT OVERWRITE t SELECT ...")
    ref = _target(target, "INSERT")
    return InsertOverwrite(ref, columns, query, partition, where)


def _partition_item(item: exp.Expr) -> tuple[str, exp.Expr | None]:
    if isinstance(item, exp.EQ) and isinstance(item.this, (exp.Column, exp.Identifier)):
        return item.this.name, item.expression
    if isinstance(item, (exp.Column, exp.Identifier)):
        return item.name, None
    raise SqlError(
        f"cannot read PARTITION item {item.sql(SPARK)}",
        hint="Write PARTITION (p = value) for a static or PARTITION (p) for a dynamic overwrite.",
    )


def _alter(alter: exp.Alter) -> CommandStatement | None:
    actions = alter.args.get("actions") or []
    if len(actions) != 1:
        return None
    action = actions[0]
    ref = _target(alter.this, "ALTER TABLE")
    if isinstance(action, exp.AlterSet):
        props = [p for e in action.expressions for p in _properties(e)]
        if not props:
            return None
        return AlterSetProperties(ref, tuple(props))
    if isinstance(action, UnsetTableProperties):
        keys = tuple(property_key(k) for k in action.expressions)
        return AlterUnsetProperties(ref, keys, bool(action.args.get("exists")))
    if isinstance(action, exp.Schema):
        defs = [c for c in action.expressions if isinstance(c, exp.ColumnDef)]
        if len(defs) != len(action.expressions):
            raise UnsupportedStatementError(
                "ALTER TABLE ... ADD COLUMNS takes column definitions only",
                hint="ALTER TABLE t ADD COLUMNS (c INT COMMENT 'why', d STRING)",
            )
        return AlterAddColumns(ref, tuple(column_spec(c) for c in defs))
    if isinstance(action, exp.ColumnDef):
        return AlterAddColumns(ref, (column_spec(action),))
    if isinstance(action, exp.RenameColumn):
        old, new = action.this, action.args.get("to")
        if new is None:
            raise SqlError("RENAME COLUMN needs TO", hint="ALTER TABLE t RENAME COLUMN a TO b")
        return AlterRenameColumn(
            ref, _top_level_name(old, "RENAME COLUMN"), _top_level_name(new, "RENAME COLUMN")
        )
    if isinstance(action, exp.ClusterProperty):
        return AlterClusterBy(ref, cluster_columns(action, "ALTER TABLE"))
    if isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() in (
        "COLUMN",
        "COLUMNS",
    ):
        names: list[str] = []
        for item in action.args.get("tables") or []:
            parts = item.expressions if isinstance(item, exp.Schema) else [item]
            names.extend(_top_level_name(p, "DROP COLUMN") for p in parts)
        return AlterDropColumns(ref, tuple(names), bool(action.args.get("exists")))
    return build_constraint_action(ref, action)


def cluster_columns(prop: exp.ClusterProperty, statement: str) -> tuple[str, ...]:
    """The top-level columns of ``CLUSTER BY (c, ...)``; ``()`` for ``CLUSTER BY NONE``.

    Raises:
        UnsupportedStatementError: ``CLUSTER BY AUTO`` (Databricks chooses the columns) or
            a nested field.
    """
    keyword = prop.this.name.upper() if isinstance(prop.this, exp.Expr) else str(prop.this or "")
    if keyword == "NONE" and statement == "ALTER TABLE":
        return ()
    if keyword:
        raise UnsupportedStatementError(
            f"{statement} ... CLUSTER BY {keyword} is not supported: txsql clusters by the "
            "columns you name",
            hint="Name them: CLUSTER BY (c1, c2).",
        )
    return tuple(_top_level_name(c, "CLUSTER BY") for c in prop.expressions)


def _top_level_name(node: exp.Expr | None, clause: str) -> str:
    """A top-level column name; nested fields (``a.b``) are not supported."""
    if isinstance(node, exp.Identifier) or (
        isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier)
    ):
        return node.name
    shown = node.sql(SPARK) if node is not None else "nothing"
    raise UnsupportedStatementError(
        f"{clause} takes a top-level column name, not {shown}",
        hint="Nested struct fields cannot be renamed or dropped by txsql yet.",
    )


def _properties(node: exp.Expr) -> list[tuple[str, str]]:
    items = node.expressions if isinstance(node, exp.Properties) else [node]
    out = []
    for prop in items:
        if isinstance(prop, exp.Property) and "value" in prop.args:
            out.append((property_key(prop.this), property_value(prop.args["value"])))
        elif isinstance(prop, exp.EQ):
            out.append((property_key(prop.this), property_value(prop.expression)))
        else:
            raise SqlError(
                f"cannot read table property {prop.sql(SPARK)}",
                hint="SET TBLPROPERTIES ('key' = 'value', ...)",
            )
    return out


def _restore(restore: Restore) -> RestoreTable:
    ref = _target(restore.this, "RESTORE")
    value = restore.expression
    if restore.args["kind"] == "VERSION":
        if not (isinstance(value, exp.Literal) and not value.is_string):
            raise SqlError("VERSION AS OF needs an integer literal", hint="e.g. VERSION AS OF 3")
        return RestoreTable(ref, version=int(value.this))
    return RestoreTable(ref, timestamp=value.sql(SPARK))
