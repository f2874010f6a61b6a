"""sqlglot -> typed statements for DELETE and UPDATE."""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import SchemaError, SqlError, UnsupportedStatementError
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.statements import Delete, Update


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
    for unsupported in ("from", "from_", "limit", "order", "returning"):
        if update.args.get(unsupported):
            raise UnsupportedStatementError(
                f"UPDATE ... {unsupported.rstrip('_').upper()} is not supported",
                hint="Use MERGE INTO to update from another table.",
            )
    table, alias = _target(update.this, "UPDATE")
    qualifiers = {q.lower() for q in (alias, table.name) if q}
    assignments: list[tuple[str, exp.Expr]] = []
    seen: set[str] = set()
    for item in update.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise SqlError(
                f"cannot read assignment `{item.sql(SPARK)}`", hint="Write SET column = value."
            )
        column = item.this
        qualifier = column.table
        if column.args.get("db") or (qualifier and qualifier.lower() not in qualifiers):
            raise SchemaError(
                f"UPDATE cannot assign `{column.sql(SPARK)}`",
                hint="Assign top-level columns of the target table: SET c = value.",
            )
        if column.name.lower() in seen:
            raise SqlError(
                f"column {column.name} is assigned twice in UPDATE",
                hint="Assign each column at most once.",
            )
        seen.add(column.name.lower())
        assignments.append((column.name, item.expression))
    where = update.args.get("where")
    return Update(
        table_ref(table), tuple(assignments), alias, where.this if where is not None else None
    )
