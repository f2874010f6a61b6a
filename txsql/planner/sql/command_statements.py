"""Table maintenance and overwrite statements (:mod:`txsql.planner.sql.commands` builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from txsql.planner.sql.refs import ColumnSpec, TableRef


@dataclass(frozen=True, slots=True)
class InsertOverwrite:
    """``INSERT OVERWRITE [PARTITION (...)]`` or ``INSERT INTO ... REPLACE WHERE``.

    ``partition`` maps each PARTITION column to its static value, or None for a dynamic
    one; ``replace_where`` is the REPLACE WHERE condition.
    """

    target: TableRef
    columns: tuple[str, ...] | None
    query: exp.Expr
    partition: tuple[tuple[str, exp.Expr | None], ...] | None = None
    replace_where: exp.Expr | None = None


@dataclass(frozen=True, slots=True)
class AlterSetProperties:
    target: TableRef
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class AlterUnsetProperties:
    target: TableRef
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class AlterAddColumns:
    target: TableRef
    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True, slots=True)
class AlterRenameColumn:
    """ALTER TABLE t RENAME COLUMN a TO b (metadata-only; needs column mapping)."""

    target: TableRef
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class AlterDropColumns:
    """ALTER TABLE t DROP COLUMN[S] [IF EXISTS] a[, b] (metadata-only; needs column mapping)."""

    target: TableRef
    columns: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class DescribeDetail:
    target: TableRef


@dataclass(frozen=True, slots=True)
class RestoreTable:
    target: TableRef
    version: int | None = None
    timestamp: str | None = None  # a Spark SQL expression


@dataclass(frozen=True, slots=True)
class OptimizeTable:
    """OPTIMIZE (bin-packing, optionally ZORDER BY; clustering on a clustered table, every
    file with ``full``) or, with ``purge``, REORG ... PURGE."""

    target: TableRef
    where: exp.Expr | None = None
    zorder: tuple[str, ...] = ()
    purge: bool = False
    full: bool = False
    # Not SQL: idle maintenance purges only files at least this fraction deleted.
    purge_threshold: float = 0.0


@dataclass(frozen=True, slots=True)
class AlterClusterBy:
    """``ALTER TABLE t CLUSTER BY (c, ...)`` / ``CLUSTER BY NONE`` (``columns`` empty)."""

    target: TableRef
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VacuumTable:
    target: TableRef
    retain_hours: float | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class AlterAddConstraint:
    """``ALTER TABLE t ADD CONSTRAINT name CHECK (expr)``; ``expression`` is Spark SQL."""

    target: TableRef
    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class AlterDropConstraint:
    """``ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name``."""

    target: TableRef
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class AlterColumn:
    """``ALTER TABLE t ALTER COLUMN c SET|DROP NOT NULL`` / ``SET DEFAULT expr|DROP DEFAULT`` /
    ``TYPE t`` (also ``CHANGE COLUMN c c t``).

    Exactly one change: ``nullable`` (False: SET NOT NULL), ``default`` (Spark SQL text),
    ``drop_default`` or ``new_type`` (Spark SQL type text: type widening).
    """

    target: TableRef
    column: str
    nullable: bool | None = None
    default: str | None = None
    drop_default: bool = False
    new_type: str | None = None


CommandStatement = (
    InsertOverwrite
    | AlterClusterBy
    | AlterAddConstraint
    | AlterDropConstraint
    | AlterColumn
    | AlterSetProperties
    | AlterUnsetProperties
    | AlterAddColumns
    | AlterRenameColumn
    | AlterDropColumns
    | DescribeDetail
    | RestoreTable
    | OptimizeTable
    | VacuumTable
)
