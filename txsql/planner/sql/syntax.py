"""Syntax errors as a plain sentence pointing at the token that broke.

sqlglot's own messages name its internals ("Required keyword: 'expression' missing for
<class 'sqlglot.expressions.core.Mul'>") and its position is the *end* of a token. This
module reads the failing token back from the tokenizer and says what was expected in SQL
words: a misspelt statement or clause keyword ("did you mean SELECT?"), a missing operand
("expected an expression after `+`, found `FROM`"), a missing parenthesis, or an
unexpected token.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

# Words a statement may start with (txsql's statements and Spark's).
STATEMENT_WORDS = (
    "SELECT", "WITH", "VALUES", "FROM", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE",
    "CREATE", "REPLACE", "DROP", "ALTER", "TRUNCATE", "DESCRIBE", "DESC", "SHOW", "EXPLAIN",
    "OPTIMIZE", "VACUUM", "RESTORE", "REORG", "BEGIN", "START", "COMMIT", "ROLLBACK", "USE",
    "SET", "RESET", "CACHE", "UNCACHE", "REFRESH", "ANALYZE", "MSCK", "GRANT", "REVOKE",
    "CONVERT", "FSCK", "COPY", "LIST", "ADD", "CLEAR", "SYNC", "COMMENT", "DECLARE",
    "EXECUTE", "CALL", "LOAD", "GENERATE", "UNDROP", "APPLY", "CLONE", "REPAIR", "PREPARE",
)  # fmt: skip
# Clause keywords a misspelling is checked against.
CLAUSE_WORDS = (
    "SELECT", "FROM", "WHERE", "GROUP", "ORDER", "BY", "HAVING", "LIMIT", "JOIN", "INNER",
    "LEFT", "RIGHT", "OUTER", "ON", "USING", "SET", "INTO", "VALUES", "WHEN", "MATCHED",
    "THEN", "AND", "OR", "NOT", "NULL", "UNION", "DISTINCT", "BETWEEN", "LIKE", "CASE",
    "ELSE", "END", "TABLE", "PARTITIONED", "TBLPROPERTIES", "VERSION", "TIMESTAMP",
)  # fmt: skip
_REQUIRED = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")
_EXPECTING = re.compile(r"^Expecting (.+)$")
_CONDITION_CLAUSES = {"Where": "WHERE", "Having": "HAVING", "Qualify": "QUALIFY"}


# sqlglot logs warnings ("… contains unsupported syntax. Falling back to parsing as a
# 'Command'.") that Python prints on stderr when nothing configures logging. txsql decides
# itself what to do with such statements, so its own parses drop them.
_PARSING: contextvars.ContextVar[bool] = contextvars.ContextVar("txsql_parsing", default=False)


class _DropWhileParsing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _PARSING.get()


_SQLGLOT_FILTER = _DropWhileParsing()


@contextlib.contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """Drop sqlglot's log records while txsql parses (other callers still get them)."""
    logger = logging.getLogger("sqlglot")
    if _SQLGLOT_FILTER not in logger.filters:
        logger.addFilter(_SQLGLOT_FILTER)
    token = _PARSING.set(True)
    try:
        yield
    finally:
        _PARSING.reset(token)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """What to tell the user: a sentence and the 1-based line/column in the statement."""

    message: str
    line: int | None
    column: int | None


def describe(text: str, detail: Mapping[str, Any], tokens: Sequence[Token]) -> SyntaxProblem:
    """Turn sqlglot's error ``detail`` for statement ``text`` into a sentence and position.

    ``tokens`` are the statement's tokens (from the dialect's tokenizer).
    """
    description = str(detail.get("description") or "")
    bad_index = _token_index(tokens, detail.get("line"), detail.get("col"))
    first = tokens[0] if tokens else None
    if first is not None and _is_word(first) and first.text.upper() not in STATEMENT_WORDS:
        guess = _closest(first.text, STATEMENT_WORDS)
        hint = f"; did you mean {guess}?" if guess else ""
        return _at(text, first, f"`{first.text}` does not start a SQL statement{hint}")
    if bad_index is None:
        return SyntaxProblem(_plain(description), detail.get("line"), detail.get("col"))
    bad = tokens[bad_index]
    prev = tokens[bad_index - 1] if bad_index > 0 else None
    for candidate in (bad, prev):
        if candidate is not None and _is_word(candidate):
            guess = _closest(candidate.text, CLAUSE_WORDS)
            if guess:
                message = f"`{candidate.text}` is not a keyword here; did you mean {guess}?"
                return _at(text, candidate, message)
    last = bad_index == len(tokens) - 1
    found = "the end of the statement" if last else f"`{_shown(text, bad)}`"
    required = _REQUIRED.search(description)
    if required is not None:
        return _missing_operand(text, tokens, bad_index, required.group(1), required.group(2))
    expecting = _EXPECTING.match(description.strip())
    if expecting is not None:
        wanted = expecting.group(1).strip()
        if last:
            return _at(text, bad, f"expected `{wanted}` after `{_shown(text, bad)}`, found {found}")
        return _at(text, bad, f"expected `{wanted}` before {found}")
    if "Unexpected token" in description or "Invalid expression" in description:
        after = f" after `{_shown(text, prev)}`" if prev is not None else ""
        return _at(text, bad, f"unexpected `{_shown(text, bad)}`{after}")
    return _at(text, bad, _plain(description))


def _missing_operand(
    text: str, tokens: Sequence[Token], bad_index: int, key: str, node: str
) -> SyntaxProblem:
    """sqlglot built node ``node`` without its ``key`` child: an operand is missing."""
    bad = tokens[bad_index]
    prev = tokens[bad_index - 1] if bad_index > 0 else None
    if node in _CONDITION_CLAUSES:
        keyword = _CONDITION_CLAUSES[node]
        before = reversed(tokens[: bad_index + 1])
        at = next((t for t in before if t.text.upper() == keyword), bad)
        found = _after(text, tokens, at)
        return _at(text, at, f"expected a condition after {keyword}, found {found}")
    if key == "this" and prev is not None:  # the left operand of `prev`
        return _at(text, prev, f"expected an expression before `{_shown(text, prev)}`")
    if bad_index == len(tokens) - 1:
        shown = _shown(text, bad)
        return _at(
            text, bad, f"expected an expression after `{shown}`, found the end of the statement"
        )
    after = f" after `{_shown(text, prev)}`" if prev is not None else ""
    return _at(text, bad, f"expected an expression{after}, found `{_shown(text, bad)}`")


def tokenizer_problem(text: str, error: TokenError) -> SyntaxProblem:
    """A tokenizer failure: almost always an unclosed quote or comment.

    >>> tokenizer_problem("SELECT 'abc FROM t", TokenError("x")).message
    "unclosed string: the ' at column 8 has no closing '"
    """
    for quote, what in (("'", "string"), ('"', "string"), ("`", "quoted name")):
        start = _unclosed(text, quote)
        if start is not None:
            line = text.count("\n", 0, start) + 1
            column = start - (text.rfind("\n", 0, start) + 1) + 1
            return SyntaxProblem(
                f"unclosed {what}: the {quote} at column {column} has no closing {quote}",
                line,
                column,
            )
    if text.count("/*") > text.count("*/"):
        start = text.rfind("/*")
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        return SyntaxProblem("unclosed comment: /* has no closing */", line, column)
    return SyntaxProblem(f"cannot read the SQL: {_plain(str(error))}", None, None)


def _unclosed(text: str, quote: str) -> int | None:
    """Offset of a quote that is never closed (quotes doubled or backslashed are escapes)."""
    i, opened = 0, None
    other = {"'", '"', "`"} - {quote}
    while i < len(text):
        ch = text[i]
        if opened is None and ch in other:  # skip other quoted runs wholesale
            end = text.find(ch, i + 1)
            if end < 0:
                return None
            i = end + 1
            continue
        if ch == "\\" and opened is not None:
            i += 2
            continue
        if ch == quote:
            if opened is None:
                opened = i
            elif i + 1 < len(text) and text[i + 1] == quote:
                i += 1
            else:
                opened = None
        i += 1
    return opened


def _token_index(tokens: Sequence[Token], line: Any, col: Any) -> int | None:
    if not isinstance(line, int) or not isinstance(col, int):
        return None
    # sqlglot reports the token's last column; a quoted token ends one past its text.
    for end in (col, col - 1):
        for i, token in enumerate(tokens):
            if token.line == line and token.col == end:
                return i
    return None


def _is_word(token: Token) -> bool:
    return token.token_type == TokenType.VAR


def _closest(word: str, words: Sequence[str]) -> str | None:
    upper = word.upper()
    if upper in words or len(upper) < 3:
        return None
    found = difflib.get_close_matches(upper, words, n=1, cutoff=0.75)
    return found[0] if found else None


def _start(text: str, token: Token) -> int:
    start = token.start
    # the tokenizer's start of a quoted token is after its opening quote
    if start > 0 and text[start - 1] in "'\"`" and token.token_type != TokenType.VAR:
        return start - 1
    if start > 0 and text[start - 1] == "`":
        return start - 1
    return start


def _shown(text: str, token: Token) -> str:
    start = _start(text, token)
    end = token.end + 1
    if end < len(text) and text[end] in "'\"`" and start < token.start:
        end += 1
    return text[start:end]


def _after(text: str, tokens: Sequence[Token], token: Token) -> str:
    index = tokens.index(token)
    if index + 1 >= len(tokens):
        return "the end of the statement"
    return f"`{_shown(text, tokens[index + 1])}`"


def _at(text: str, token: Token, message: str) -> SyntaxProblem:
    start = _start(text, token)
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return SyntaxProblem(message, line, column)


def _plain(description: str) -> str:
    """sqlglot's text without Python class names."""
    return re.sub(r"\s*for <class '[^']*'>", "", description).strip() or "invalid syntax"
