"""DDL and catalog statements (:mod:`txsql.planner.sql.ddl` builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from txsql.planner.sql.refs import TableRef


@dataclass(frozen=True, slots=True)
class DropTable:
    target: TableRef
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class TruncateTable:
    target: TableRef


@dataclass(frozen=True, slots=True)
class RenameTable:
    """``ALTER TABLE t RENAME TO u``: a catalog-only rename (the files stay in place)."""

    target: TableRef
    new_name: TableRef


@dataclass(frozen=True, slots=True)
class CreateSchema:
    name: str
    if_not_exists: bool = False
    comment: str | None = None
    location: str | None = None


@dataclass(frozen=True, slots=True)
class DropSchema:
    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True, slots=True)
class UseSchema:
    name: str


@dataclass(frozen=True, slots=True)
class ShowSchemas:
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class ShowTables:
    schema: str | None = None
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeTable:
    """``DESCRIBE [TABLE] [EXTENDED] t`` (the columns, then partitioning and details)."""

    target: TableRef
    extended: bool = False


@dataclass(frozen=True, slots=True)
class ShowTblProperties:
    target: TableRef
    key: str | None = None


@dataclass(frozen=True, slots=True)
class ShowColumns:
    target: TableRef


@dataclass(frozen=True, slots=True)
class ShowCreateTable:
    target: TableRef


DdlStatement = (
    DropTable
    | TruncateTable
    | RenameTable
    | CreateSchema
    | DropSchema
    | UseSchema
    | ShowSchemas
    | ShowTables
    | DescribeTable
    | ShowTblProperties
    | ShowColumns
    | ShowCreateTable
)
