"""sqlglot -> typed statements for DELETE and UPDATE, and the SET targets both UPDATE and
MERGE share (a column, ``alias.column``, or a struct field ``s.a.b``)."""

from __future__ import annotations

import re

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.refs import ColumnPath
from txsql.planner.sql.statements import Delete, Update

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _target(node: exp.Expr | None, statement: str) -> tuple[exp.Table, str | None]:
    if not isinstance(node, exp.Table):
        raise SqlError(f"{statement} needs a table", hint=f"e.g. {statement} t ...")
    table_ref(node)  # validates VERSION AS OF syntax early
    return node, (node.alias or None)


def build_delete(delete: exp.Delete) -> Delete:
    for unsupported in ("using", "limit", "order", "returning"):
        value = delete.args.get(unsupported)
        if value:
            raise UnsupportedStatementError(
                f"DELETE ... {unsupported.upper()} is not supported",
                hint="Use a subquery in WHERE, e.g. WHERE id IN (SELECT id FROM other).",
            )
    table, alias = _target(delete.this, "DELETE FROM")
    where = delete.args.get("where")
    return Delete(table_ref(table), alias, where.this if where is not None else None)


def build_update(update: exp.Update) -> Update:
    """The typed UPDATE; SET targets stay name paths as written (resolved against the
    table's schema when it runs: a qualifier, a column, struct fields)."""
    for unsupported in ("from", "from_", "limit", "order", "returning"):
        if update.args.get(unsupported):
            raise UnsupportedStatementError(
                f"UPDATE ... {unsupported.rstrip('_').upper()} is not supported",
                hint="Use MERGE INTO to update from another table.",
            )
    table, alias = _target(update.this, "UPDATE")
    assignments: list[tuple[ColumnPath, exp.Expr]] = []
    seen: set[ColumnPath] = set()
    for item in update.expressions:
        path = set_target(item)
        key = tuple(p.lower() for p in path)
        if key in seen:
            raise SqlError(
                f"column {path_sql(path)} is assigned twice in UPDATE",
                hint="Assign each column at most once.",
            )
        seen.add(key)
        assignments.append((path, item.expression))
    where = update.args.get("where")
    return Update(
        table_ref(table), tuple(assignments), alias, where.this if where is not None else None
    )


def set_target(item: exp.Expr) -> ColumnPath:
    """The name path a ``target = value`` assignment writes to.

    >>> import sqlglot
    >>> u = sqlglot.parse_one("UPDATE t SET t.s.a.b.c = 1, `dot.col` = 2", read="spark")
    >>> [set_target(a) for a in u.expressions]
    [('t', 's', 'a', 'b', 'c'), ('dot.col',)]
    """
    target = item.this if isinstance(item, exp.EQ) else None
    path = column_path(target) if target is not None else None
    if path is None:
        raise SqlError(
            f"cannot read assignment `{item.sql(SPARK)}`", hint="Write SET column = value."
        )
    return path


def column_path(node: exp.Expr) -> ColumnPath | None:
    """The name parts of a column reference (``a.b.c.d.e`` nests Dots around a Column)."""
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            return None
        return tuple(part.name for part in node.parts)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        inner = column_path(node.this)
        return None if inner is None else (*inner, node.expression.name)
    return None


def path_sql(path: ColumnPath) -> str:
    """A name path as SQL text, each part backquoted when it must be.

    >>> path_sql(("s", "dot.col", "back`tick"))
    's.`dot.col`.`back``tick`'
    """
    return ".".join(p if _PLAIN_NAME.match(p) else "`" + p.replace("`", "``") + "`" for p in path)
