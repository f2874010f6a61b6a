"""SELECT: the query runs in Spark over snapshot views of the txsql tables it names."""

from __future__ import annotations

from txsql.planner.context import RunContext
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.operations.count import count_from_log
from txsql.planner.sql.statements import Query
from txsql.result import Result


def run_query(ctx: RunContext, statement: Query, text: str) -> Result:
    counted = count_from_log(ctx, statement.expression, text)
    if counted is not None:
        return counted  # a bare COUNT(*) answered from the log's stats, no Spark job
    df, versions = query_dataframe(ctx, statement.expression)
    version = next(iter(versions.values())) if len(versions) == 1 else None
    table = next(iter(versions)) if len(versions) == 1 else None
    return Result(text, "SELECT", version=version, table=table, df=df)
