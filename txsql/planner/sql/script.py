"""Split a cell or script into statements and parse each one with sqlglot.

Splitting uses sqlglot's tokenizer, so semicolons inside strings and comments are not
separators, and every statement remembers where it starts in the cell so errors can point
at the cell's line and column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from txsql.errors import ExpressionTooDeepError, SqlParseError
from txsql.planner.sql.dialect import DIALECT, TxSql
from txsql.planner.sql.syntax import describe, quiet_sqlglot, tokenizer_problem


@dataclass(frozen=True, slots=True)
class StatementText:
    """One statement of a script: its text and 1-based start position in the script."""

    text: str
    offset: int
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class ParsedStatement:
    """One statement of a script: where it is, its tree, and the ``:name`` values bound
    into the tree (kept so an error can name the parameter whose value failed)."""

    source: StatementText
    expression: exp.Expr
    parameters: tuple[tuple[str, Any], ...] = ()


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of character ``offset`` in ``text``.

    >>> position("a\\nbc", 3)
    (2, 2)
    """
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def split_statements(script: str) -> list[StatementText]:
    """Split ``script`` at top-level semicolons.

    >>> [s.text for s in split_statements("SELECT ';' ; -- x;y\\nSELECT 2")]
    ["SELECT ';'", 'SELECT 2']
    """
    try:
        tokens = TxSql().tokenize(script)
    except TokenError as e:
        problem = tokenizer_problem(script, e)  # an unclosed quote or comment, located
        raise SqlParseError(
            f"syntax error: {problem.message}",
            statement=script,
            line=problem.line,
            column=problem.column,
        ) from None
    statements: list[StatementText] = []
    start: int | None = None
    end = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                statements.append(_statement(script, start, end))
            start = None
            continue
        if start is None:
            start = _token_start(script, token.start)
        end = token.end + 1
        if token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
            end = _closing_quote_end(script, end)
    if start is not None:
        statements.append(_statement(script, start, end))
    return statements


def parse_script(script: str) -> list[ParsedStatement]:
    """Parse every statement of ``script``; a syntax error names the script line/column."""
    parsed = []
    for source in split_statements(script):
        parsed.append(ParsedStatement(source, parse_statement(source, script)))
    return parsed


def parse_statement(source: StatementText, script: str) -> exp.Expr:
    try:
        with quiet_sqlglot():
            expressions = sqlglot.parse(source.text, read=DIALECT)
    except ParseError as e:
        # a plain sentence at the token that broke, not sqlglot's internals
        problem = describe(source.text, e.errors[0] if e.errors else {}, _tokens(source.text))
        line, column = _script_position(source, problem.line, problem.column)
        raise SqlParseError(
            f"syntax error in `{_abbreviate(source.text)}`: {problem.message}",
            statement=source.text,
            line=line,
            column=column,
        ) from None
    except RecursionError:
        raise _too_deep(source) from None
    if len(expressions) != 1 or expressions[0] is None:
        raise SqlParseError(
            "expected exactly one statement",
            statement=source.text,
            line=source.line,
            column=source.column,
        )
    return expressions[0]


def _tokens(text: str) -> list[Token]:
    try:
        return TxSql().tokenize(text)
    except TokenError:
        return []


def _script_position(source: StatementText, line: int | None, col: int | None) -> tuple[int, int]:
    if line is None or col is None:
        return source.line, source.column
    if line == 1:
        return source.line, source.column + max(col, 1) - 1
    return source.line + line - 1, max(col, 1)


def _statement(script: str, start: int, end: int) -> StatementText:
    line, column = position(script, start)
    return StatementText(script[start:end].strip(), start, line, column)


def _token_start(script: str, start: int) -> int:
    # sqlglot reports the start of a quoted token after its opening quote
    if start > 0 and script[start - 1] in "'\"`":
        return start - 1
    return start


def _closing_quote_end(script: str, end: int) -> int:
    if end < len(script) and script[end] in "'\"`":
        return end + 1
    return end


def _abbreviate(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _too_deep(source: StatementText) -> ExpressionTooDeepError:
    """The error for a statement sqlglot cannot parse within Python's recursion limit.

    It points at the deepest opening parenthesis, the usual culprit.
    """
    depth = deepest = 0
    where: tuple[int | None, int | None] = (None, None)
    try:
        tokens = TxSql().tokenize(source.text)
    except TokenError:
        tokens = []
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth > deepest:
                deepest, where = depth, (token.line, token.col)
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    line, column = _script_position(source, *where)
    levels = f" ({deepest} levels of parentheses)" if deepest else ""
    return ExpressionTooDeepError(
        f"expression nested too deeply{levels} in `{_abbreviate(source.text)}`",
        statement=source.text,
        line=line,
        column=column,
    )
