"""The statement table: each typed statement -> how it runs and how EXPLAIN shows it.

Adding a statement takes a statement class (:mod:`txsql.planner.sql.statements`, with its
name in ``STATEMENT_NAMES``), a builder entry (:data:`txsql.planner.sql.build.BUILDERS`) and
an entry here. BEGIN / COMMIT / ROLLBACK / PREPARE TRANSACTION are not here: the session
runs them itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from txsql.planner.context import RunContext
from txsql.planner.operations.alter import (
    run_add_columns,
    run_set_properties,
    run_unset_properties,
)
from txsql.planner.operations.clone import run_clone
from txsql.planner.operations.clustering import run_alter_cluster_by
from txsql.planner.operations.columns import run_drop_columns, run_rename_column
from txsql.planner.operations.constraints import (
    run_add_constraint,
    run_alter_column,
    run_drop_constraint,
)
from txsql.planner.operations.delete import run_delete
from txsql.planner.operations.describe import run_describe_detail, run_describe_history
from txsql.planner.operations.describe_table import (
    run_describe_table,
    run_show_columns,
    run_show_tblproperties,
)
from txsql.planner.operations.drop import run_drop_table
from txsql.planner.operations.explain import Explainer, explain_dml, explain_query, run_explain
from txsql.planner.operations.merge.explain import explain_merge
from txsql.planner.operations.merge.run import run_merge
from txsql.planner.operations.optimize import run_optimize
from txsql.planner.operations.overwrite import run_insert_overwrite
from txsql.planner.operations.query import run_query
from txsql.planner.operations.rename import run_rename
from txsql.planner.operations.replace import run_create_or_replace
from txsql.planner.operations.restore import run_restore
from txsql.planner.operations.schemas import (
    run_create_schema,
    run_drop_schema,
    run_show_schemas,
    run_show_tables,
    run_use,
)
from txsql.planner.operations.show_create import run_show_create_table
from txsql.planner.operations.truncate import run_truncate
from txsql.planner.operations.update import run_update
from txsql.planner.operations.vacuum import run_vacuum
from txsql.planner.operations.views import run_create_view, run_spark_statement
from txsql.planner.operations.writes import run_insert
from txsql.planner.prepared import (
    run_commit_prepared,
    run_rollback_prepared,
    run_show_transactions,
)
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
    DescribeDetail,
    InsertOverwrite,
    OptimizeTable,
    RestoreTable,
    VacuumTable,
)
from txsql.planner.sql.ddl_statements import (
    CreateSchema,
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
from txsql.planner.sql.statements import (
    CloneTable,
    CommitPrepared,
    CreateTable,
    CreateView,
    Delete,
    DescribeHistory,
    Explain,
    InsertInto,
    Merge,
    Query,
    RollbackPrepared,
    ShowTransactions,
    SparkStatement,
    Update,
)
from txsql.result import Result

Runner = Callable[[RunContext, Any, str], Result]


@dataclass(frozen=True, slots=True)
class Entry:
    """How one statement type runs; ``explain`` is None for the generic one-line plan."""

    run: Runner
    explain: Explainer | None = None


def _run_explain(ctx: RunContext, statement: Explain, text: str) -> Result:
    entry = STATEMENTS.get(type(statement.statement))
    return run_explain(ctx, statement, text, entry.explain if entry else None)


STATEMENTS: dict[type, Entry] = {
    CreateTable: Entry(run_create_or_replace),
    CloneTable: Entry(run_clone),
    CreateView: Entry(run_create_view),
    SparkStatement: Entry(run_spark_statement),
    InsertInto: Entry(run_insert),
    InsertOverwrite: Entry(run_insert_overwrite),
    Query: Entry(run_query, explain_query),
    Delete: Entry(run_delete, explain_dml),
    Update: Entry(run_update, explain_dml),
    Merge: Entry(run_merge, explain_merge),
    AlterSetProperties: Entry(run_set_properties),
    AlterUnsetProperties: Entry(run_unset_properties),
    AlterAddColumns: Entry(run_add_columns),
    AlterRenameColumn: Entry(run_rename_column),
    AlterDropColumns: Entry(run_drop_columns),
    AlterAddConstraint: Entry(run_add_constraint),
    AlterDropConstraint: Entry(run_drop_constraint),
    AlterColumn: Entry(run_alter_column),
    AlterClusterBy: Entry(run_alter_cluster_by),
    DescribeHistory: Entry(run_describe_history),
    DescribeDetail: Entry(run_describe_detail),
    RestoreTable: Entry(run_restore),
    OptimizeTable: Entry(run_optimize),
    VacuumTable: Entry(run_vacuum),
    Explain: Entry(_run_explain),
    DropTable: Entry(run_drop_table),
    TruncateTable: Entry(run_truncate),
    RenameTable: Entry(run_rename),
    CreateSchema: Entry(run_create_schema),
    DropSchema: Entry(run_drop_schema),
    UseSchema: Entry(run_use),
    ShowSchemas: Entry(run_show_schemas),
    ShowTables: Entry(run_show_tables),
    DescribeTable: Entry(run_describe_table),
    ShowTblProperties: Entry(run_show_tblproperties),
    ShowColumns: Entry(run_show_columns),
    ShowCreateTable: Entry(run_show_create_table),
    CommitPrepared: Entry(run_commit_prepared),
    RollbackPrepared: Entry(run_rollback_prepared),
    ShowTransactions: Entry(run_show_transactions),
}


def runner(statement_type: type) -> Runner:
    """The runner of a (non transaction-control) statement type."""
    return STATEMENTS[statement_type].run
