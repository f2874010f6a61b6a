"""The DML machinery the statement context calls back into (see ``context.DmlHooks``)."""

from __future__ import annotations

from txsql.planner.context import DmlHooks
from txsql.planner.dml.changes import record_statement_changes, statement_start
from txsql.planner.dml.row_check import SparkRowChecker

DML_HOOKS = DmlHooks(
    row_checker=SparkRowChecker,
    statement_start=statement_start,
    record_changes=record_statement_changes,
)
