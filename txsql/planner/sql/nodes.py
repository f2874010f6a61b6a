"""Small sqlglot -> typed-value helpers shared by every statement builder (a leaf module).

Table references, column definitions and property values look the same in CREATE, ALTER,
INSERT, MERGE and the commands, so they are read here once.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.column_clauses import column_clause
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.refs import ColumnSpec, TableRef


def table_ref(table: exp.Table) -> TableRef:
    """The :class:`TableRef` of a table node (``delta.`/p``` is a path)."""
    version = table.args.get("version")
    as_of_version: int | None = None
    as_of_timestamp: str | None = None
    if isinstance(version, exp.Version):
        value = version.expression
        if str(version.this).upper() == "VERSION":
            if not (isinstance(value, exp.Literal) and not value.is_string):
                raise SqlError(
                    "VERSION AS OF needs an integer literal", hint="e.g. VERSION AS OF 3"
                )
            as_of_version = int(value.this)
        else:
            as_of_timestamp = value.sql(SPARK)  # a Spark SQL expression, evaluated later
    db = table.args.get("db")
    if db is not None and db.name.lower() == "delta" and table.this.args.get("quoted"):
        return TableRef(path=table.name, version=as_of_version, timestamp=as_of_timestamp)
    name = ".".join(part.name for part in table.parts)
    return TableRef(name=name, version=as_of_version, timestamp=as_of_timestamp)


def no_time_travel(ref: TableRef, statement: str) -> TableRef:
    # `t@v1` / VERSION AS OF parse on any table name; where a version means nothing it must
    # be refused, not dropped.
    if ref.version is not None or ref.timestamp is not None:
        raise SqlError(
            f"{statement} cannot take a time-travel reference ({ref.display}@... / AS OF)",
            hint="Name the table itself, without @v<N> or VERSION/TIMESTAMP AS OF.",
        )
    return ref


# Column clauses txsql does not apply: accepting them would store a table that silently
# lacks the checks the user asked for.
UNAPPLIED_CLAUSES: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.CheckColumnConstraint, "CHECK"),
    (exp.PrimaryKeyColumnConstraint, "PRIMARY KEY"),
    (exp.UniqueColumnConstraint, "UNIQUE"),
)


_NO_DELTA_TYPE = frozenset({exp.DataType.Type.TIME, exp.DataType.Type.TIMETZ})


def column_spec(column: exp.ColumnDef) -> ColumnSpec:
    """The spec of one column definition (CREATE TABLE and ALTER TABLE ADD COLUMNS).

    NOT NULL, COMMENT, COLLATE, GENERATED ALWAYS AS (expr), GENERATED ... AS IDENTITY and
    DEFAULT are applied; every other clause is refused by name.
    """
    kind = column.args.get("kind")
    if kind is None:
        raise SqlError(f"column {column.name} needs a type", hint="e.g. `id BIGINT`")
    if any(t.this in _NO_DELTA_TYPE for t in kind.find_all(exp.DataType)):
        # sqlglot spells TIME as TIMESTAMP for Spark: the column would silently change type.
        raise UnsupportedStatementError(
            f"column {column.name}: type TIME is not supported (Delta tables have no TIME type)",
            hint="Use TIMESTAMP_NTZ for a time of day on a fixed date, or STRING 'HH:MM:SS'.",
        )
    spec = ColumnSpec(column.name, kind.sql(SPARK))
    for constraint in column.constraints:
        if isinstance(constraint.kind, exp.NotNullColumnConstraint):
            spec = replace(spec, nullable=bool(constraint.kind.args.get("allow_null")))
        elif isinstance(constraint.kind, exp.CommentColumnConstraint):
            spec = replace(spec, comment=constraint.kind.name)
        elif isinstance(constraint.kind, exp.CollateColumnConstraint):
            # Spark's type syntax; the table gets the collations feature (a writer feature).
            spec = replace(spec, collation=constraint.kind.this.name)
        elif (ruled := column_clause(spec, constraint.kind)) is not None:
            spec = ruled
        else:
            raise UnsupportedStatementError(
                f"column {column.name}: {clause_name(constraint)} is not supported "
                "(txsql would not apply it)",
                hint="Remove the clause; NOT NULL, COMMENT, GENERATED, IDENTITY and DEFAULT "
                "are supported, and table-wide rules are added with ALTER TABLE t ADD "
                "CONSTRAINT c CHECK (expr).",
            )
    return spec


def clause_name(constraint: exp.Expr) -> str:
    kind = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else None
    for node_type, name in UNAPPLIED_CLAUSES:
        if isinstance(kind, node_type):
            return name
    return f"`{constraint.sql(SPARK)}`"


def property_key(node: exp.Expr) -> str:
    return node.name if isinstance(node, (exp.Literal, exp.Identifier)) else node.sql(SPARK)


def property_value(node: exp.Expr) -> str:
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return node.name or node.sql(SPARK)


def table_node(node: exp.Expr | None) -> exp.Table:
    if not isinstance(node, exp.Table):
        raise SqlError("expected a table name", hint="Name a table or use delta.`/path`.")
    return node
