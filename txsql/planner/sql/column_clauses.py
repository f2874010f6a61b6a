"""Column clauses that make a rule: GENERATED ALWAYS AS (expr), GENERATED ... AS IDENTITY
and DEFAULT, read from sqlglot's nodes into :class:`ColumnSpec` fields (no Spark).

The rules are checked and stored by :mod:`txsql.planner.dml.column_defs` and enforced on
every write by :mod:`txsql.engine.write_rules`.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from txsql.errors import ConstraintDefinitionError, SqlError
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.refs import ColumnSpec, IdentitySpec


def column_clause(spec: ColumnSpec, kind: exp.Expr) -> ColumnSpec | None:
    """``spec`` with one GENERATED/IDENTITY/DEFAULT clause applied, or None if ``kind`` is
    none of those."""
    if isinstance(kind, exp.ComputedColumnConstraint):
        return replace(spec, generated=kind.this.sql(SPARK))
    if isinstance(kind, exp.GeneratedAsIdentityColumnConstraint):
        if kind.args.get("expression") is not None:  # GENERATED ALWAYS AS (expr), old form
            return replace(spec, generated=kind.args["expression"].sql(SPARK))
        start = _integer(kind.args.get("start"), "START WITH", spec.name, 1)
        step = _integer(kind.args.get("increment"), "INCREMENT BY", spec.name, 1)
        if step == 0:
            raise ConstraintDefinitionError(
                f"identity column {spec.name}: INCREMENT BY 0 would repeat values",
                hint="Use a non-zero step, e.g. INCREMENT BY 1.",
            )
        return replace(spec, identity=IdentitySpec(start, step, bool(kind.this)))
    if isinstance(kind, exp.DefaultColumnConstraint):
        return replace(spec, default=kind.this.sql(SPARK))
    return None


def _integer(node: exp.Expr | None, clause: str, column: str, default: int) -> int:
    if node is None:
        return default
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if not (isinstance(literal, exp.Literal) and not literal.is_string):
        raise SqlError(f"identity column {column}: {clause} needs an integer literal")
    try:
        value = int(str(literal.this))
    except ValueError as exc:
        raise SqlError(f"identity column {column}: {clause} needs an integer literal") from exc
    return -value if negative else value
