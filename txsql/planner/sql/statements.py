"""The typed statement model: what a parsed statement asks txsql to do.

DML, queries and transaction control live here, with :data:`Statement` (every kind) and
:data:`STATEMENT_NAMES`; table maintenance and DDL statements have their own modules."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from txsql.planner.sql.command_statements import (
    AlterAddColumns,
    AlterAddConstraint,
    AlterClusterBy,
    AlterColumn,
    AlterDropColumns,
    AlterDropConstraint,
    AlterRenameColumn,
    AlterSetProperties,
    AlterUnsetProperties,
    CommandStatement,
    DescribeDetail,
    InsertOverwrite,
    OptimizeTable,
    RestoreTable,
    VacuumTable,
)
from txsql.planner.sql.ddl_statements import (
    CreateSchema,
    DdlStatement,
    DescribeTable,
    DropSchema,
    DropTable,
    RenameTable,
    ShowColumns,
    ShowCreateTable,
    ShowSchemas,
    ShowTables,
    ShowTblProperties,
    TruncateTable,
    UseSchema,
)
from txsql.planner.sql.refs import ColumnPath, ColumnSpec, TableRef
from txsql.planner.sql.transactions import (
    CommitPrepared,
    PrepareTransaction,
    RollbackPrepared,
    ShowTransactions,
)


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
    # "" (plain CREATE), "CREATE OR REPLACE" (create, or replace if it exists) or
    # "REPLACE" (the table must exist): a replace is a new version of the same table.
    replace: str = ""
    clustering: tuple[str, ...] = ()  # CLUSTER BY (c, ...): liquid clustering columns


@dataclass(frozen=True, slots=True)
class CloneTable:
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE src [AS OF ...]``."""

    target: TableRef
    source: TableRef  # may carry VERSION / TIMESTAMP AS OF
    replace: str = ""  # as CreateTable.replace
    if_not_exists: bool = False
    location: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    shallow: bool = True  # False: DEEP CLONE copies the files into the clone


@dataclass(frozen=True, slots=True)
class CreateView:
    """``CREATE [OR REPLACE] TEMP[ORARY] VIEW v AS query``."""

    name: str
    query: exp.Query
    replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class SparkStatement:
    """A Spark-only statement (SET, CACHE, UNCACHE, DROP VIEW) Spark runs as given."""

    expression: exp.Expr


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


# The three kinds of WHEN clause of a MERGE.
MATCHED = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"


@dataclass(frozen=True, slots=True)
class MergeClause:
    """One WHEN clause of a MERGE, in statement order.

    ``match`` is ``matched``, ``not_matched`` (by target) or ``not_matched_by_source``;
    ``action`` is ``update``, ``delete`` or ``insert``. ``values is None`` means
    ``UPDATE SET *`` / ``INSERT *``; ``columns is None`` with values is a positional
    ``INSERT VALUES (...)``. ``columns`` are column names for INSERT and the SET targets'
    SQL text for UPDATE (``t.v``; ``s.a`` for a field of the struct column ``s``).
    """

    match: str
    action: str
    condition: exp.Expr | None = None
    columns: tuple[str, ...] | None = None
    values: tuple[exp.Expr, ...] | None = None


@dataclass(frozen=True, slots=True)
class Merge:
    """``MERGE INTO target [AS alias] USING source [AS alias] ON cond WHEN ...``."""

    target: TableRef
    target_alias: str
    source: exp.Expr  # a query selecting the source rows
    source_alias: str
    on: exp.Expr
    clauses: tuple[MergeClause, ...]
    # MERGE WITH SCHEMA EVOLUTION: source columns missing in the target are added to it
    # for INSERT * / UPDATE SET * (also when the Spark conf autoMerge.enabled is true).
    schema_evolution: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    """``DELETE FROM target [AS alias] [WHERE condition]`` (txsql.planner.sql.dml)."""

    target: TableRef
    alias: str | None = None
    where: exp.Expr | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """``UPDATE target [AS alias] SET column = expr, ... [WHERE condition]``; a SET target
    may be a struct field (``SET s.a = 1``)."""

    target: TableRef
    assignments: tuple[tuple[ColumnPath, exp.Expr], ...]
    alias: str | None = None
    where: exp.Expr | None = None


@dataclass(frozen=True, slots=True)
class Explain:
    """``EXPLAIN <statement>``: describe the plan of ``statement`` without running it."""

    statement: object  # the typed statement explained (any Statement)
    text: str


@dataclass(frozen=True, slots=True)
class Begin:
    isolation: str | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    pass


@dataclass(frozen=True, slots=True)
class Rollback:
    pass


Statement = (
    CreateTable
    | CloneTable
    | CreateView
    | SparkStatement
    | InsertInto
    | Query
    | DescribeHistory
    | Begin
    | Commit
    | Rollback
    | PrepareTransaction
    | CommitPrepared
    | RollbackPrepared
    | ShowTransactions
    | Merge
    | CommandStatement
    | DdlStatement
    | Delete
    | Update
    | Explain
)

# The SQL each statement type stands for, in the order error hints list them. Every member
# of :data:`Statement` has an entry (tests/planner/sql/test_build.py checks), and the
# registry has a runner for each one but the transaction controls.
STATEMENT_NAMES: dict[type, str] = {
    CreateTable: "CREATE [OR REPLACE] TABLE / REPLACE TABLE",
    CloneTable: "CREATE TABLE ... SHALLOW / DEEP CLONE",
    CreateView: "CREATE TEMP VIEW",
    SparkStatement: "Spark-only statements (SET, CACHE, UNCACHE, DROP VIEW)",
    InsertInto: "INSERT INTO",
    InsertOverwrite: "INSERT OVERWRITE / REPLACE WHERE",
    Query: "SELECT",
    Delete: "DELETE",
    Update: "UPDATE",
    Merge: "MERGE INTO",
    AlterSetProperties: "ALTER TABLE SET TBLPROPERTIES",
    AlterUnsetProperties: "ALTER TABLE UNSET TBLPROPERTIES",
    AlterAddColumns: "ALTER TABLE ADD COLUMNS",
    AlterRenameColumn: "ALTER TABLE RENAME COLUMN",
    AlterDropColumns: "ALTER TABLE DROP COLUMNS",
    AlterAddConstraint: "ALTER TABLE ADD CONSTRAINT",
    AlterDropConstraint: "ALTER TABLE DROP CONSTRAINT",
    AlterColumn: "ALTER TABLE ALTER COLUMN TYPE|SET/DROP NOT NULL|DEFAULT",
    AlterClusterBy: "ALTER TABLE CLUSTER BY",
    DescribeHistory: "DESCRIBE HISTORY",
    DescribeDetail: "DESCRIBE DETAIL",
    RestoreTable: "RESTORE",
    OptimizeTable: "OPTIMIZE / REORG",
    VacuumTable: "VACUUM",
    DropTable: "DROP TABLE",
    TruncateTable: "TRUNCATE TABLE",
    RenameTable: "ALTER TABLE RENAME TO",
    CreateSchema: "CREATE SCHEMA",
    DropSchema: "DROP SCHEMA",
    UseSchema: "USE",
    ShowSchemas: "SHOW SCHEMAS",
    ShowTables: "SHOW TABLES",
    DescribeTable: "DESCRIBE TABLE",
    ShowTblProperties: "SHOW TBLPROPERTIES",
    ShowColumns: "SHOW COLUMNS",
    ShowCreateTable: "SHOW CREATE TABLE",
    Explain: "EXPLAIN",
    Begin: "BEGIN",
    Commit: "COMMIT",
    Rollback: "ROLLBACK",
    PrepareTransaction: "PREPARE TRANSACTION",
    CommitPrepared: "COMMIT PREPARED",
    RollbackPrepared: "ROLLBACK PREPARED",
    ShowTransactions: "SHOW TRANSACTIONS",
}
