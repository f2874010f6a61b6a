"""The Delta statements sqlglot lacks, as expression nodes: how the ``txsql`` dialect
(:mod:`txsql.planner.sql.dialect`) parses them and prints them back as SQL.

OPTIMIZE, REORG, VACUUM, RESTORE, ALTER TABLE ... UNSET TBLPROPERTIES, REPLACE TABLE,
SHALLOW/DEEP CLONE, MERGE WITH SCHEMA EVOLUTION and Delta's ``t@v<N>`` time travel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.tokens import TokenType

# --- expression nodes ---------------------------------------------------------------------


class Optimize(exp.Expression):
    """``OPTIMIZE t [FULL] [WHERE pred] [ZORDER BY (c, ...)]``."""

    arg_types: ClassVar[dict[str, Any]] = {
        "this": True,
        "where": False,
        "zorder": False,
        "full": False,
    }


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
    full = parser._match_text_seq("FULL")
    where = parser._parse_where()
    zorder = None
    if parser._match_text_seq("ZORDER", "BY"):
        zorder = parser._parse_wrapped_csv(parser._parse_column, optional=True)
        if not zorder:
            zorder = parser._parse_csv(parser._parse_column)
        zorder = exp.Tuple(expressions=zorder)
    return Optimize(this=table, where=where, zorder=zorder, full=full or None)


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


def parse_unset(parser: Any) -> UnsetTableProperties:
    if not parser._match_text_seq("TBLPROPERTIES"):
        parser.raise_error("Expected UNSET TBLPROPERTIES")
    exists = parser._parse_exists()
    keys = parser._parse_wrapped_csv(parser._parse_field)
    return UnsetTableProperties(expressions=keys, exists=bool(exists))


def try_parse_clone(parser: Any) -> CloneTable | None:
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


def time_travel_suffix(parser: Any) -> exp.Version:
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


STATEMENT_PARSERS: dict[str, Callable[[Any], exp.Expr]] = {
    "OPTIMIZE": _parse_optimize,
    "REORG": _parse_reorg,
    "VACUUM": _parse_vacuum,
    "RESTORE": _parse_restore,
}


# --- SQL text ---------------------------------------------------------------------------


def optimize_sql(gen: Any, e: Optimize) -> str:
    full = " FULL" if e.args.get("full") else ""
    text = f"OPTIMIZE {gen.sql(e, 'this')}{full}{gen.sql(e, 'where')}"
    if e.args.get("zorder") is not None:
        text += f" ZORDER BY ({gen.expressions(e.args['zorder'], flat=True)})"
    return text


def reorg_sql(gen: Any, e: Reorg) -> str:
    return f"REORG TABLE {gen.sql(e, 'this')}{gen.sql(e, 'where')} APPLY (PURGE)"


def clone_sql(gen: Any, e: CloneTable) -> str:
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


def vacuum_sql(gen: Any, e: Vacuum) -> str:
    text = f"VACUUM {gen.sql(e, 'this')}"
    if e.args.get("retain") is not None:
        text += f" RETAIN {gen.sql(e, 'retain')} HOURS"
    return text + (" DRY RUN" if e.args.get("dry_run") else "")
