"""The SHOW statements txsql reads (sqlglot 30.x leaves every SHOW an opaque command).

``SHOW SCHEMAS|DATABASES [LIKE p]``, ``SHOW TABLES [IN|FROM s] [LIKE p]``,
``SHOW TBLPROPERTIES t [(key)]``, ``SHOW COLUMNS IN|FROM t [IN|FROM s]``,
``SHOW CREATE TABLE t`` and ``SHOW TRANSACTIONS [LIMIT n]`` become one :class:`Show` node
whose ``kind`` names which; any other SHOW is refused by name. Only sqlglot is imported
here (the dialect imports it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.tokens import TokenType

from txsql.errors import UnsupportedStatementError

SHOW_KINDS = ("SCHEMAS", "TABLES", "TBLPROPERTIES", "COLUMNS", "CREATE TABLE", "TRANSACTIONS")


class Show(exp.Expression):
    """One SHOW statement: ``kind`` (one of :data:`SHOW_KINDS`), ``this`` a table,
    ``schema`` an identifier, ``pattern`` the LIKE string, ``key`` a property key."""

    arg_types: ClassVar[dict[str, Any]] = {
        "kind": True,
        "this": False,
        "schema": False,
        "pattern": False,
        "key": False,
        "limit": False,
    }


def parse_show(parser: Any) -> Show:
    """Parse what follows ``SHOW`` (already consumed)."""
    if parser._match_texts(("SCHEMAS", "DATABASES")):
        return Show(kind="SCHEMAS", pattern=_pattern(parser))
    if parser._match_texts(("TABLES",)):
        schema = _schema(parser)
        return Show(kind="TABLES", schema=schema, pattern=_pattern(parser))
    if parser._match_texts(("TBLPROPERTIES",)):
        table = _table(parser)
        key = None
        if parser._match(TokenType.L_PAREN):
            key = parser._parse_string() or parser._parse_column()
            if key is None or not parser._match(TokenType.R_PAREN):
                parser.raise_error("Expected SHOW TBLPROPERTIES t ('key')")
        return Show(kind="TBLPROPERTIES", this=table, key=key)
    if parser._match_texts(("COLUMNS",)):
        if not parser._match_set((TokenType.IN, TokenType.FROM)):
            parser.raise_error("Expected SHOW COLUMNS IN t or SHOW COLUMNS FROM t")
        table = _table(parser)
        return Show(kind="COLUMNS", this=table, schema=_schema(parser))
    if parser._match_texts(("TRANSACTIONS",)):
        limit = None
        if parser._match(TokenType.LIMIT):
            limit = parser._parse_number()
            if limit is None:
                parser.raise_error("Expected SHOW TRANSACTIONS LIMIT <number>")
        return Show(kind="TRANSACTIONS", limit=limit)
    if parser._match(TokenType.CREATE):
        if not parser._match(TokenType.TABLE):
            parser.raise_error("Expected SHOW CREATE TABLE t")
        table = _table(parser)
        if parser._match_text_seq("AS", "SERDE"):
            raise UnsupportedStatementError(
                "SHOW CREATE TABLE ... AS SERDE is not supported",
                hint="Delta tables are not Hive SerDe tables: use SHOW CREATE TABLE t.",
            )
        return Show(kind="CREATE TABLE", this=table)
    word = parser._curr.text.upper() if parser._curr is not None else ""
    raise UnsupportedStatementError(
        f"SHOW {word} is not supported".replace("  ", " "),
        hint="txsql runs SHOW SCHEMAS, SHOW TABLES, SHOW TBLPROPERTIES, SHOW COLUMNS, "
        "SHOW CREATE TABLE and SHOW TRANSACTIONS.",
    )


def _table(parser: Any) -> exp.Table:
    table = parser._parse_table_parts(schema=True)
    if not isinstance(table, exp.Table):
        parser.raise_error("Expected a table name")
    return table


def _schema(parser: Any) -> exp.Identifier | None:
    if not parser._match_set((TokenType.IN, TokenType.FROM)):
        return None
    identifier = parser._parse_id_var(any_token=False)
    if not isinstance(identifier, exp.Identifier):
        parser.raise_error("Expected a schema name")
    return identifier


def _pattern(parser: Any) -> str | None:
    parser._match(TokenType.LIKE)  # Spark accepts the pattern with or without LIKE
    literal = parser._parse_string()
    return literal.name if isinstance(literal, exp.Literal) else None


def show_sql(gen: Any, e: Show) -> str:
    """Spark SQL for a :class:`Show` (EXPLAIN and error messages print statements)."""
    kind = e.args["kind"]
    text = f"SHOW {kind}"
    if e.args.get("this") is not None:
        text += f" {'IN ' if kind == 'COLUMNS' else ''}{gen.sql(e, 'this')}"
    if e.args.get("schema") is not None:
        text += f" IN {gen.sql(e, 'schema')}"
    if e.args.get("key") is not None:
        text += f" ({gen.sql(e, 'key')})"
    if e.args.get("limit") is not None:
        text += f" LIMIT {gen.sql(e, 'limit')}"
    if e.args.get("pattern") is not None:
        text += f" LIKE '{e.args['pattern']}'"
    return text
