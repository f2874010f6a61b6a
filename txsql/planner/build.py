"""Turn sqlglot expressions into the typed statements of :mod:`txsql.planner.statements`."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.dialect import SPARK
from txsql.planner.statements import (
    Begin,
    ColumnSpec,
    Commit,
    CreateTable,
    DescribeHistory,
    InsertInto,
    Query,
    Rollback,
    Statement,
    TableRef,
)

SUPPORTED = "CREATE TABLE, INSERT INTO, SELECT, DESCRIBE HISTORY, BEGIN, COMMIT, ROLLBACK"


def build_statement(expression: exp.Expr) -> Statement:
    """Build the typed statement for one parsed expression."""
    from txsql.planner.commands import build_command  # local: commands imports this module

    command = build_command(expression)
    if command is not None:
        return command
    from txsql.planner.dml_build import build_dml  # local: dml_build imports this module

    dml = build_dml(expression)
    if dml is not None:
        return dml
    if isinstance(expression, exp.Create) and expression.kind == "TABLE":
        return _create_table(expression)
    if isinstance(expression, exp.Insert):
        return _insert(expression)
    if isinstance(expression, exp.Merge):
        from txsql.planner.merge_plan import build_merge  # local: merge_plan imports this

        return build_merge(expression)
    if isinstance(expression, exp.Query):
        return Query(expression)
    if isinstance(expression, exp.Describe) and expression.args.get("style") == "HISTORY":
        return DescribeHistory(
            _no_time_travel(table_ref(_table(expression.this)), "DESCRIBE HISTORY")
        )
    if isinstance(expression, exp.Transaction):
        return Begin(_isolation(expression))
    if isinstance(expression, exp.Commit):
        return Commit()
    if isinstance(expression, exp.Rollback):
        return Rollback()
    raise UnsupportedStatementError(
        f"{_kind(expression)} statements are not supported yet",
        hint=f"txsql runs {SUPPORTED}.",
    )


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


def _no_time_travel(ref: TableRef, statement: str) -> TableRef:
    # `t@v1` / VERSION AS OF parse on any table name; where a version means nothing it must
    # be refused, not dropped.
    if ref.version is not None or ref.timestamp is not None:
        raise SqlError(
            f"{statement} cannot take a time-travel reference ({ref.display}@... / AS OF)",
            hint="Name the table itself, without @v<N> or VERSION/TIMESTAMP AS OF.",
        )
    return ref


def _create_table(create: exp.Create) -> CreateTable:
    target = create.this
    if create.args.get("replace"):
        # Accepting OR REPLACE and creating instead would fail on the second run or, worse,
        # read as "replaced" when it was not; real REPLACE (a new version of the same table
        # removing every file) is not implemented yet, so refuse it by name.
        raise UnsupportedStatementError(
            "CREATE OR REPLACE TABLE is not supported yet",
            hint=_REPLACE_HINT,
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
        columns = tuple(_column(c) for c in target.expressions)
        target = target.this
    properties = create.args.get("properties")
    partition_columns: tuple[str, ...] = ()
    table_properties: list[tuple[str, str]] = []
    location: str | None = None
    comment: str | None = None
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
        elif isinstance(prop, exp.Property) and "value" in prop.args:
            table_properties.append((_property_key(prop.this), _property_value(prop.args["value"])))
        else:
            raise UnsupportedStatementError(
                f"CREATE TABLE option `{prop.sql(SPARK)}` is not supported",
                hint="Supported: PARTITIONED BY, TBLPROPERTIES, LOCATION, COMMENT.",
            )
    query = create.expression if isinstance(create.expression, exp.Query) else None
    return CreateTable(
        target=_no_time_travel(table_ref(_table(target)), "CREATE TABLE"),
        columns=columns,
        partition_columns=partition_columns,
        properties=tuple(table_properties),
        location=location,
        if_not_exists=bool(create.args.get("exists")),
        query=query,
        comment=comment,
    )


_REPLACE_HINT = (
    "DROP TABLE is not available yet either: create the table under a new name, or use "
    "CREATE TABLE IF NOT EXISTS and then INSERT OVERWRITE to replace its rows."
)

# Column clauses txsql does not apply: accepting them would store a table that silently
# lacks the checks the user asked for.
_UNAPPLIED_CLAUSES: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.CheckColumnConstraint, "CHECK"),
    (exp.PrimaryKeyColumnConstraint, "PRIMARY KEY"),
    (exp.UniqueColumnConstraint, "UNIQUE"),
)


def _column(column: exp.ColumnDef) -> ColumnSpec:
    """The spec of one column definition (CREATE TABLE and ALTER TABLE ADD COLUMNS).

    NOT NULL, COMMENT, GENERATED ALWAYS AS (expr), GENERATED ... AS IDENTITY and DEFAULT
    are applied; every other clause is refused by name.
    """
    from txsql.planner.column_defs import column_clause

    kind = column.args.get("kind")
    if kind is None:
        raise SqlError(f"column {column.name} needs a type", hint="e.g. `id BIGINT`")
    spec = ColumnSpec(column.name, kind.sql(SPARK))
    for constraint in column.constraints:
        if isinstance(constraint.kind, exp.NotNullColumnConstraint):
            spec = replace(spec, nullable=bool(constraint.kind.args.get("allow_null")))
        elif isinstance(constraint.kind, exp.CommentColumnConstraint):
            spec = replace(spec, comment=constraint.kind.name)
        elif (ruled := column_clause(spec, constraint.kind)) is not None:
            spec = ruled
        else:
            raise UnsupportedStatementError(
                f"column {column.name}: {_clause_name(constraint)} is not supported "
                "(txsql would not apply it)",
                hint="Remove the clause; NOT NULL, COMMENT, GENERATED, IDENTITY and DEFAULT "
                "are supported, and table-wide rules are added with ALTER TABLE t ADD "
                "CONSTRAINT c CHECK (expr).",
            )
    return spec


def _clause_name(constraint: exp.Expr) -> str:
    kind = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else None
    for node_type, name in _UNAPPLIED_CLAUSES:
        if isinstance(kind, node_type):
            return name
    return f"`{constraint.sql(SPARK)}`"


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


def _property_key(node: exp.Expr) -> str:
    return node.name if isinstance(node, (exp.Literal, exp.Identifier)) else node.sql(SPARK)


def _property_value(node: exp.Expr) -> str:
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return node.name or node.sql(SPARK)


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
    return InsertInto(table_ref(_table(target)), columns, query)


def _isolation(begin: exp.Transaction) -> str | None:
    for mode in begin.args.get("modes") or []:
        words = str(mode).split()
        if [w.upper() for w in words[:2]] == ["ISOLATION", "LEVEL"] and len(words) > 2:
            return "".join(words[2:])
    return None


def _table(node: exp.Expr | None) -> exp.Table:
    if not isinstance(node, exp.Table):
        raise SqlError("expected a table name", hint="Name a table or use delta.`/path`.")
    return node


def _kind(expression: exp.Expr) -> str:
    if isinstance(expression, exp.Command):
        return str(expression.this).upper()
    return expression.key.upper()
