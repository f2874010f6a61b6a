"""The ``txsql`` sqlglot dialect: Databricks SQL plus the Delta statements it lacks.

sqlglot (as of 30.x) parses ``OPTIMIZE`` and ``VACUUM`` as opaque commands, fails on
``RESTORE``, ``REORG`` and ``DESCRIBE DETAIL`` and falls back to a command for
``ALTER TABLE ... UNSET TBLPROPERTIES``. The dialect adds them through sqlglot's own
extension points: a ``DETAIL`` describe style, an ``UNSET`` entry in ``ALTER_PARSERS`` and,
for the statements that start with a word sqlglot does not know, a ``_parse_statement``
override that dispatches on that word before the generic rules run.

The class name is unique on purpose: sqlglot registers dialects by lowercased class name,
so naming it ``Databricks`` would replace the built-in dialect process-wide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.generators.databricks import DatabricksGenerator
from sqlglot.parsers.databricks import DatabricksParser
from sqlglot.tokens import TokenType

from txsql.planner.sql.show import Show, parse_show, show_sql

DIALECT = "txsql"
SPARK = "spark"


# --- expression nodes ---------------------------------------------------------------------


class Optimize(exp.Expression):
    """``OPTIMIZE t [WHERE pred] [ZORDER BY (c, ...)]``."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "where": False, "zorder": False}


class Reorg(exp.Expression):
    """``REORG TABLE t [WHERE pred] APPLY (PURGE)``."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "where": False}


class Vacuum(exp.Expression):
    """``VACUUM t [RETAIN n HOURS] [DRY RUN]``; ``retain`` is the hours literal."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "retain": False, "dry_run": False}


class Restore(exp.Expression):
    """``RESTORE [TABLE] t [TO] VERSION|TIMESTAMP AS OF x``; ``kind`` names which."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "kind": True, "expression": True}


class ReplaceTable(exp.Expression):
    """Delta's ``REPLACE TABLE ...``: ``this`` is the parsed CREATE (the table must exist)."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class CloneTable(exp.Expression):
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE src [AS OF]``,
    also ``REPLACE TABLE t ... CLONE``; ``replace`` is "", "CREATE OR REPLACE" or "REPLACE",
    ``properties`` the TBLPROPERTIES pairs, ``location`` the LOCATION string."""

    arg_types: ClassVar[dict[str, Any]] = {
        "this": True,
        "source": True,
        "shallow": True,
        "replace": False,
        "exists": False,
        "location": False,
        "properties": False,
    }


class MergeWithEvolution(exp.Expression):
    """``MERGE WITH SCHEMA EVOLUTION INTO ...``: ``this`` is the parsed MERGE."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class UnsetTableProperties(exp.Expression):
    """The ``UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)`` action of an ALTER TABLE."""

    arg_types: ClassVar[dict[str, Any]] = {"expressions": True, "exists": False}


# --- parsing ------------------------------------------------------------------------------


def _table(parser: Any) -> exp.Table:
    table = parser._parse_table_parts(schema=True)
    if not isinstance(table, exp.Table):
        parser.raise_error("Expected a table name")
    return table


def _parse_optimize(parser: Any) -> Optimize:
    table = _table(parser)
    where = parser._parse_where()
    zorder = None
    if parser._match_text_seq("ZORDER", "BY"):
        zorder = parser._parse_wrapped_csv(parser._parse_column, optional=True)
        if not zorder:
            zorder = parser._parse_csv(parser._parse_column)
        zorder = exp.Tuple(expressions=zorder)
    return Optimize(this=table, where=where, zorder=zorder)


def _parse_reorg(parser: Any) -> Reorg:
    parser._match(TokenType.TABLE)
    table = _table(parser)
    where = parser._parse_where()
    if not parser._match_text_seq("APPLY"):
        parser.raise_error("Expected APPLY (PURGE)")
    if not (
        parser._match(TokenType.L_PAREN)
        and parser._match_text_seq("PURGE")
        and parser._match(TokenType.R_PAREN)
    ):
        parser.raise_error("Only REORG TABLE ... APPLY (PURGE) is supported")
    return Reorg(this=table, where=where)


def _parse_vacuum(parser: Any) -> Vacuum:
    table = _table(parser)
    retain = None
    if parser._match_text_seq("RETAIN"):
        retain = parser._parse_number()
        if retain is None or not parser._match_texts(("HOURS", "HOUR")):
            parser.raise_error("Expected RETAIN <number> HOURS")
    dry_run = parser._match_text_seq("DRY", "RUN")
    return Vacuum(this=table, retain=retain, dry_run=bool(dry_run))


def _parse_restore(parser: Any) -> Restore:
    parser._match(TokenType.TABLE)
    table = _table(parser)
    parser._match_text_seq("TO")
    if parser._match_texts(("VERSION", "TIMESTAMP")):
        kind = parser._prev.text.upper()
    else:
        parser.raise_error("Expected VERSION AS OF or TIMESTAMP AS OF")
        kind = "VERSION"
    if not parser._match_text_seq("AS", "OF"):
        parser.raise_error(f"Expected {kind} AS OF")
    value = parser._parse_bitwise()
    if value is None:
        parser.raise_error(f"Expected a value after {kind} AS OF")
    return Restore(this=table, kind=kind, expression=value)


def _parse_unset(parser: Any) -> UnsetTableProperties:
    if not parser._match_text_seq("TBLPROPERTIES"):
        parser.raise_error("Expected UNSET TBLPROPERTIES")
    exists = parser._parse_exists()
    keys = parser._parse_wrapped_csv(parser._parse_field)
    return UnsetTableProperties(expressions=keys, exists=bool(exists))


def _try_parse_clone(parser: Any) -> CloneTable | None:
    """Parse ``[CREATE [OR REPLACE] | REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE``.

    Returns None (having consumed nothing) when the statement is no CLONE; sqlglot itself
    reads only a bare ``SHALLOW CLONE src`` and falls back to an opaque command otherwise.
    """
    start = parser._index
    if parser._match(TokenType.REPLACE):
        replace = "REPLACE"
    else:
        parser._match(TokenType.CREATE)
        replace = "CREATE OR REPLACE" if parser._match_pair(TokenType.OR, TokenType.REPLACE) else ""
    if not parser._match(TokenType.TABLE):
        parser._retreat(start)
        return None
    exists = bool(parser._parse_exists(not_=True))
    target = parser._parse_table_parts(schema=True)
    if not isinstance(target, exp.Table) or not parser._match_texts(("SHALLOW", "DEEP")):
        parser._retreat(start)
        return None
    shallow = parser._prev.text.upper() == "SHALLOW"
    if not parser._match_text_seq("CLONE"):
        parser._retreat(start)
        return None
    source = parser._parse_table_parts()
    if not isinstance(source, exp.Table):
        parser.raise_error("Expected the source table after CLONE")
    version = parser._parse_version()
    if version is not None:
        source.set("version", version)
    location: str | None = None
    properties: list[exp.Expr] = []
    while True:
        if parser._match_text_seq("LOCATION"):
            string = parser._parse_string()
            if string is None:
                parser.raise_error("Expected a string after LOCATION")
            location = string.name
        elif parser._match_text_seq("TBLPROPERTIES"):
            properties.extend(parser._parse_wrapped_csv(parser._parse_property))
        else:
            break
    return CloneTable(
        this=target,
        source=source,
        shallow=shallow,
        replace=replace,
        exists=exists,
        location=location,
        properties=properties,
    )


def _time_travel_suffix(parser: Any) -> exp.Version:
    """Delta's ``t@v<N>`` / ``t@<yyyyMMddHHmmssSSS>`` suffix (the ``@`` is already read).

    It becomes the same ``Version`` node as ``VERSION AS OF N`` / ``TIMESTAMP AS OF '...'``,
    so everything downstream (reads, refusals of time-travel targets) treats both alike.
    sqlglot itself would read ``@v1`` as a table alias and silently read the latest version.
    """
    token = parser._curr
    text = token.text if token is not None else ""
    if token is not None and token.token_type == TokenType.VAR and _is_version_word(text):
        parser._advance()
        return exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(text[1:]))
    if token is not None and token.token_type == TokenType.NUMBER and _is_stamp(text):
        parser._advance()
        stamp = (
            f"{text[0:4]}-{text[4:6]}-{text[6:8]} "
            f"{text[8:10]}:{text[10:12]}:{text[12:14]}.{text[14:17]}"
        )
        return exp.Version(this="TIMESTAMP", kind="AS OF", expression=exp.Literal.string(stamp))
    parser.raise_error(
        f"unsupported time travel `@{text}`: write t@v<N> (e.g. people@v3) or "
        "t@yyyyMMddHHmmssSSS (17 digits), or VERSION AS OF / TIMESTAMP AS OF"
    )
    return exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(0))


def _is_version_word(text: str) -> bool:
    return len(text) > 1 and text[0] in "vV" and text[1:].isdigit()


def _is_stamp(text: str) -> bool:
    return len(text) == 17 and text.isdigit()


_STATEMENTS: dict[str, Callable[[Any], exp.Expr]] = {
    "OPTIMIZE": _parse_optimize,
    "REORG": _parse_reorg,
    "VACUUM": _parse_vacuum,
    "RESTORE": _parse_restore,
}


class TxSql(Databricks):
    """Databricks SQL as txsql reads it."""

    class Tokenizer(Databricks.Tokenizer):
        # sqlglot turns OPTIMIZE/VACUUM into command tokens that swallow the statement as
        # one string; as plain words the parser below can read their clauses.
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **Databricks.Tokenizer.KEYWORDS,
            "OPTIMIZE": TokenType.VAR,
            "VACUUM": TokenType.VAR,
        }
        # SHOW is a command token that swallows the rest of the statement as one string;
        # without it, txsql.planner.sql.show parses the SHOW statements it runs.
        COMMANDS: ClassVar[set[TokenType]] = Databricks.Tokenizer.COMMANDS - {TokenType.SHOW}

    class Parser(DatabricksParser):
        DESCRIBE_STYLES: ClassVar[set[str]] = {*DatabricksParser.DESCRIBE_STYLES, "DETAIL"}
        ALTER_PARSERS: ClassVar[dict[str, Callable[[Any], Any]]] = {
            **DatabricksParser.ALTER_PARSERS,
            "UNSET": _parse_unset,
        }

        def _parse_describe(self) -> exp.Describe:
            # DESCRIBE HISTORY t LIMIT n: the limit becomes the describe's "limit" arg.
            describe = super()._parse_describe()
            if describe.args.get("style") == "HISTORY" and self._match(TokenType.LIMIT):
                limit = self._parse_number()
                if limit is None:
                    self.raise_error("Expected DESCRIBE HISTORY t LIMIT <number>")
                describe.set("limit", limit)
            return describe

        def _parse_statement(self) -> exp.Expr | None:
            curr = self._curr
            if curr is not None and curr.token_type == TokenType.SHOW and self._next is not None:
                self._advance()
                return parse_show(self)
            if (
                curr is not None
                and curr.token_type == TokenType.VAR
                and curr.text.upper() in _STATEMENTS
                and self._next is not None
            ):
                self._advance()
                return _STATEMENTS[curr.text.upper()](self)
            if (
                curr is not None
                and curr.token_type == TokenType.MERGE
                and self._next is not None
                and self._next.token_type == TokenType.WITH
            ):
                self._advance()
                if not self._match_text_seq("WITH", "SCHEMA", "EVOLUTION"):
                    self.raise_error("Expected MERGE WITH SCHEMA EVOLUTION INTO ...")
                return MergeWithEvolution(this=self._parse_merge())
            if curr is not None and curr.token_type in (TokenType.CREATE, TokenType.REPLACE):
                clone = _try_parse_clone(self)
                if clone is not None:
                    return clone
            if (
                curr is not None
                and curr.token_type == TokenType.REPLACE
                and self._next is not None
                and self._next.token_type == TokenType.TABLE
            ):
                # Delta's REPLACE TABLE: sqlglot's CREATE rule reads the rest (it takes a
                # REPLACE start token as OR REPLACE); the wrapper says the table must exist.
                self._advance()
                return ReplaceTable(this=self._parse_create())
            return super()._parse_statement()

        def _parse_table_parts(self, *args: Any, **kwargs: Any) -> exp.Table | exp.Dot | None:
            # ``t@v1`` right after a table name: Delta time travel (see _time_travel_suffix).
            # sqlglot parses the version clause later (after the alias), and sets it even when
            # empty, so the suffix waits in ``_txsql_at`` for that table's _parse_version.
            self._txsql_at: exp.Version | None = None
            table = super()._parse_table_parts(*args, **kwargs)
            if isinstance(table, exp.Table) and self._match(TokenType.PARAMETER):
                version = _time_travel_suffix(self)
                table.set("version", version)
                self._txsql_at = version
            return table

        def _parse_version(self) -> exp.Version | None:
            pending = getattr(self, "_txsql_at", None)
            self._txsql_at = None
            version = super()._parse_version()
            if pending is not None and version is not None:
                self.raise_error("use either t@v<N> or VERSION/TIMESTAMP AS OF, not both")
            return version if version is not None else pending

        def _parse_parameter(self) -> exp.Parameter:
            # Any other ``@name`` (e.g. ``SELECT a@b``) would become an alias or a parameter
            # Spark never sees as meant: refuse it rather than answer something else.
            if self._prev is not None and self._prev.text == "@":
                self.raise_error(
                    "`@` is only supported as Delta time travel right after a table name "
                    "(t@v<N> or t@yyyyMMddHHmmssSSS)"
                )
            return super()._parse_parameter()

    class Generator(DatabricksGenerator):
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **DatabricksGenerator.TRANSFORMS,
            Optimize: lambda self, e: _optimize_sql(self, e),
            Show: show_sql,
            Reorg: lambda self, e: _reorg_sql(self, e),
            Vacuum: lambda self, e: _vacuum_sql(self, e),
            Restore: lambda self, e: (
                f"RESTORE TABLE {self.sql(e, 'this')} TO {e.args['kind']} AS OF "
                f"{self.sql(e, 'expression')}"
            ),
            ReplaceTable: lambda self, e: (
                "REPLACE" + self.sql(e, "this")[len("CREATE OR REPLACE") :]
            ),
            CloneTable: lambda self, e: _clone_sql(self, e),
            MergeWithEvolution: lambda self, e: (
                "MERGE WITH SCHEMA EVOLUTION " + self.sql(e, "this")[len("MERGE ") :]
            ),
            UnsetTableProperties: lambda self, e: (
                "UNSET TBLPROPERTIES "
                + ("IF EXISTS " if e.args.get("exists") else "")
                + f"({self.expressions(e, flat=True)})"
            ),
        }


def _optimize_sql(gen: Any, e: Optimize) -> str:
    text = f"OPTIMIZE {gen.sql(e, 'this')}{gen.sql(e, 'where')}"
    if e.args.get("zorder") is not None:
        text += f" ZORDER BY ({gen.expressions(e.args['zorder'], flat=True)})"
    return text


def _reorg_sql(gen: Any, e: Reorg) -> str:
    return f"REORG TABLE {gen.sql(e, 'this')}{gen.sql(e, 'where')} APPLY (PURGE)"


def _clone_sql(gen: Any, e: CloneTable) -> str:
    replace = e.args.get("replace") or ""
    text = "REPLACE" if replace == "REPLACE" else ("CREATE OR REPLACE" if replace else "CREATE")
    text += " TABLE " + ("IF NOT EXISTS " if e.args.get("exists") else "")
    text += f"{gen.sql(e, 'this')} {'SHALLOW' if e.args.get('shallow') else 'DEEP'} CLONE "
    text += gen.sql(e, "source")
    if e.args.get("properties"):
        text += f" TBLPROPERTIES ({gen.expressions(e, 'properties', flat=True)})"
    if e.args.get("location"):
        text += f" LOCATION '{e.args['location']}'"
    return text


def _vacuum_sql(gen: Any, e: Vacuum) -> str:
    text = f"VACUUM {gen.sql(e, 'this')}"
    if e.args.get("retain") is not None:
        text += f" RETAIN {gen.sql(e, 'retain')} HOURS"
    return text + (" DRY RUN" if e.args.get("dry_run") else "")


__all__ = [
    "DIALECT",
    "SPARK",
    "CloneTable",
    "MergeWithEvolution",
    "Optimize",
    "Reorg",
    "ReplaceTable",
    "Restore",
    "Show",
    "TxSql",
    "UnsetTableProperties",
    "Vacuum",
]
