"""sqlglot -> typed statements for DELETE, UPDATE and EXPLAIN."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from txsql.errors import SchemaError, SqlError, SqlParseError, UnsupportedStatementError
from txsql.planner.dialect import DIALECT, SPARK
from txsql.planner.statements import Delete, Explain, Statement, Update

# Spark's EXPLAIN modes; txsql shows its own plan whichever is given.
_EXPLAIN_MODES = re.compile(r"^\s*(EXTENDED|FORMATTED|COST|CODEGEN)\b", re.IGNORECASE)


def build_dml(expression: exp.Expr) -> Statement | None:
    """The Delete/Update/Explain statement for ``expression``, or None for other kinds."""
    if isinstance(expression, exp.Delete):
        return _delete(expression)
    if isinstance(expression, exp.Update):
        return _update(expression)
    if isinstance(expression, exp.Command) and str(expression.this).upper() == "EXPLAIN":
        return _explain(expression)
    return None


def _target(node: exp.Expr | None, statement: str) -> tuple[exp.Table, str | None]:
    from txsql.planner.build import table_ref

    if not isinstance(node, exp.Table):
        raise SqlError(f"{statement} needs a table", hint=f"e.g. {statement} t ...")
    table_ref(node)  # validates VERSION AS OF syntax early
    return node, (node.alias or None)


def _delete(delete: exp.Delete) -> Delete:
    from txsql.planner.build import table_ref

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


def _update(update: exp.Update) -> Update:
    from txsql.planner.build import table_ref

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


def _explain(command: exp.Command) -> Explain:
    from txsql.planner.build import build_statement

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
