"""ALTER TABLE actions that define rules: ADD/DROP CONSTRAINT, ALTER COLUMN SET/DROP NOT
NULL and SET/DROP DEFAULT, from sqlglot's nodes to typed statements."""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.command_statements import (
    AlterAddConstraint,
    AlterColumn,
    AlterDropConstraint,
)
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.refs import TableRef


def build_constraint_action(
    ref: TableRef, action: exp.Expr
) -> AlterAddConstraint | AlterDropConstraint | AlterColumn | None:
    """The statement for one ALTER TABLE action, or None if it is not a rule action."""
    if isinstance(action, exp.AddConstraint):
        return _add_constraint(ref, action)
    if isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "CONSTRAINT":
        names = action.args.get("tables") or []
        if len(names) != 1:
            raise SqlError("DROP CONSTRAINT names one constraint", hint="DROP CONSTRAINT c")
        return AlterDropConstraint(ref, names[0].name, bool(action.args.get("exists")))
    if isinstance(action, exp.AlterColumn):
        return _alter_column(ref, action)
    return None


def _add_constraint(ref: TableRef, action: exp.AddConstraint) -> AlterAddConstraint:
    items = action.expressions
    constraint = items[0] if len(items) == 1 else None
    checks = constraint.expressions if isinstance(constraint, exp.Constraint) else []
    if (
        not isinstance(constraint, exp.Constraint)
        or len(checks) != 1
        or not isinstance(checks[0], exp.CheckColumnConstraint)
    ):
        raise UnsupportedStatementError(
            f"`{action.sql(SPARK)}` is not supported: txsql adds named CHECK constraints",
            hint="ALTER TABLE t ADD CONSTRAINT name CHECK (expr)",
        )
    return AlterAddConstraint(ref, constraint.name, checks[0].this.sql(SPARK))


def _alter_column(ref: TableRef, action: exp.AlterColumn) -> AlterColumn:
    column = action.this.name
    if action.args.get("comment"):
        raise UnsupportedStatementError(
            "ALTER COLUMN ... COMMENT is not supported",
            hint="ALTER COLUMN supports TYPE (widening), SET/DROP NOT NULL and SET/DROP DEFAULT.",
        )
    renamed = action.args.get("rename_to")
    if renamed is not None and renamed.name.lower() != column.lower():
        raise UnsupportedStatementError(
            f"CHANGE COLUMN {column} {renamed.name}: renaming through CHANGE COLUMN is not "
            "supported",
            hint=f"Use ALTER TABLE ... RENAME COLUMN {column} TO {renamed.name}.",
        )
    dtype = action.args.get("dtype")
    if dtype is not None:
        if action.args.get("using") or action.args.get("collate"):
            raise UnsupportedStatementError(
                f"`ALTER COLUMN {action.sql(SPARK)}`: USING and COLLATE are not supported",
                hint="Widen the type alone: ALTER TABLE t ALTER COLUMN c TYPE BIGINT.",
            )
        return AlterColumn(ref, column, new_type=dtype.sql(SPARK))
    allow_null = action.args.get("allow_null")
    if allow_null is not None:
        return AlterColumn(ref, column, nullable=bool(allow_null))
    default = action.args.get("default")
    if default is not None:
        return AlterColumn(ref, column, default=default.sql(SPARK))
    if action.args.get("drop"):
        return AlterColumn(ref, column, drop_default=True)
    raise UnsupportedStatementError(
        f"`ALTER COLUMN {action.sql(SPARK)}` is not supported",
        hint="ALTER COLUMN supports TYPE (widening), SET/DROP NOT NULL and SET/DROP DEFAULT.",
    )
