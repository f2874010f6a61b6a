"""Runners of the statements :mod:`txsql.planner.commands` builds, by statement type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txsql.planner.alter import run_add_columns, run_set_properties, run_unset_properties
from txsql.planner.constraints import run_add_constraint, run_alter_column, run_drop_constraint
from txsql.planner.context import RunContext
from txsql.planner.detail import run_describe_detail
from txsql.planner.optimize import run_optimize
from txsql.planner.overwrite import run_insert_overwrite
from txsql.planner.restore import run_restore
from txsql.planner.statements import (
    AlterAddColumns,
    AlterAddConstraint,
    AlterColumn,
    AlterDropConstraint,
    AlterSetProperties,
    AlterUnsetProperties,
    DescribeDetail,
    InsertOverwrite,
    OptimizeTable,
    RestoreTable,
    VacuumTable,
)
from txsql.planner.vacuum import run_vacuum
from txsql.result import Result

COMMAND_RUNNERS: dict[type, Callable[[RunContext, Any, str], Result]] = {
    InsertOverwrite: run_insert_overwrite,
    AlterSetProperties: run_set_properties,
    AlterUnsetProperties: run_unset_properties,
    AlterAddColumns: run_add_columns,
    AlterAddConstraint: run_add_constraint,
    AlterDropConstraint: run_drop_constraint,
    AlterColumn: run_alter_column,
    DescribeDetail: run_describe_detail,
    RestoreTable: run_restore,
    OptimizeTable: run_optimize,
    VacuumTable: run_vacuum,
}
