"""Prepared transactions in SQL, in PostgreSQL's spelling.

``PREPARE TRANSACTION 'id'``, ``COMMIT PREPARED 'id'`` and ``ROLLBACK PREPARED 'id'``
become :class:`PrepareNode` / :class:`DecidePreparedNode` expressions, parsed by the
``txsql`` dialect (:mod:`txsql.planner.sql.dialect`), and then the typed statements
:class:`PrepareTransaction`, :class:`CommitPrepared` and :class:`RollbackPrepared`.
``SHOW TRANSACTIONS`` is a SHOW kind (:mod:`txsql.planner.sql.show`) built into
:class:`ShowTransactions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.tokens import TokenType


class PrepareNode(exp.Expression):
    """``PREPARE TRANSACTION 'id'``: ``this`` is the id literal."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class DecidePreparedNode(exp.Expression):
    """``COMMIT PREPARED 'id'`` or ``ROLLBACK PREPARED 'id'``; ``kind`` names which."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "kind": True}


@dataclass(frozen=True, slots=True)
class PrepareTransaction:
    transaction_id: str


@dataclass(frozen=True, slots=True)
class CommitPrepared:
    transaction_id: str


@dataclass(frozen=True, slots=True)
class RollbackPrepared:
    transaction_id: str


@dataclass(frozen=True, slots=True)
class ShowTransactions:
    """``SHOW TRANSACTIONS [LIMIT n]``: the newest ``limit`` coordinator groups, and every
    prepared transaction still undecided."""

    limit: int = 20


def starts_prepared_statement(parser: Any) -> bool:
    """Whether the parser stands on ``PREPARE TRANSACTION`` or ``COMMIT|ROLLBACK PREPARED``."""
    curr, following = parser._curr, parser._next
    if curr is None or following is None:
        return False
    if curr.text.upper() == "PREPARE":
        return following.text.upper() == "TRANSACTION"
    return (
        curr.token_type in (TokenType.COMMIT, TokenType.ROLLBACK)
        and following.text.upper() == "PREPARED"
    )


def parse_prepared_statement(parser: Any) -> exp.Expression:
    """Parse the statement :func:`starts_prepared_statement` recognised."""
    word = parser._curr.text.upper()
    parser._advance()
    parser._advance()  # TRANSACTION / PREPARED
    literal = parser._parse_string()
    if not isinstance(literal, exp.Literal) or not literal.is_string:
        what = "PREPARE TRANSACTION" if word == "PREPARE" else f"{word} PREPARED"
        parser.raise_error(f"Expected {what} 'id' (the id is a string literal)")
    if word == "PREPARE":
        return PrepareNode(this=literal)
    return DecidePreparedNode(this=literal, kind=word)


def prepared_sql(gen: Any, e: exp.Expression) -> str:
    """The SQL text of the nodes (EXPLAIN and error messages print statements)."""
    if isinstance(e, PrepareNode):
        return f"PREPARE TRANSACTION {gen.sql(e, 'this')}"
    return f"{e.args['kind']} PREPARED {gen.sql(e, 'this')}"


def build_prepared(
    node: PrepareNode | DecidePreparedNode,
) -> PrepareTransaction | CommitPrepared | RollbackPrepared:
    transaction_id = node.this.name
    if isinstance(node, PrepareNode):
        return PrepareTransaction(transaction_id)
    if node.args["kind"] == "COMMIT":
        return CommitPrepared(transaction_id)
    return RollbackPrepared(transaction_id)
