"""The typed statement model: what a parsed statement asks txsql to do."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table named in SQL: a warehouse name, or a path (``delta.`/path```)."""

    name: str | None = None
    path: str | None = None
    version: int | None = None
    timestamp: str | None = None

    @property
    def display(self) -> str:
        return self.name if self.name is not None else f"delta.`{self.path}`"


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    type_sql: str
    nullable: bool = True
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class CreateTable:
    target: TableRef
    columns: tuple[ColumnSpec, ...]
    partition_columns: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    location: str | None = None
    if_not_exists: bool = False
    query: exp.Query | None = None  # CREATE TABLE ... AS SELECT
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class InsertInto:
    target: TableRef
    columns: tuple[str, ...] | None
    query: exp.Expr  # a Values or a Query


@dataclass(frozen=True, slots=True)
class Query:
    """A SELECT (or any query) that Spark runs after txsql tables become temp views."""

    expression: exp.Expr


@dataclass(frozen=True, slots=True)
class DescribeHistory:
    target: TableRef
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class Begin:
    isolation: str | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    pass


@dataclass(frozen=True, slots=True)
class Rollback:
    pass


Statement = CreateTable | InsertInto | Query | DescribeHistory | Begin | Commit | Rollback
