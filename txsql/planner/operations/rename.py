"""ALTER TABLE t RENAME TO u: a catalog-only rename.

The new name's entry is written put-if-absent (so a racing CREATE or RENAME of ``u``
cannot both win), then ``t``'s entry is deleted; a crash in between leaves the table
under both names, never under none. The table's files do not move: a managed table
renamed from ``t`` stays in ``<warehouse>/t`` (still managed: DROP TABLE u deletes it),
and the name ``t`` no longer resolves to that directory. The log gets no commit (Delta
records no rename in the table's history either).
"""

from __future__ import annotations

from txsql.planner.context import RunContext
from txsql.planner.operations.drop import refuse_in_transaction
from txsql.planner.sql.ddl_statements import RenameTable
from txsql.result import Result


def run_rename(ctx: RunContext, statement: RenameTable, text: str) -> Result:
    refuse_in_transaction(ctx, "ALTER TABLE ... RENAME TO")
    log = ctx.catalog.existing_log(statement.target)  # TableNotFoundError
    location = ctx.catalog.rename(statement.target, statement.new_name)
    return Result(
        text,
        "RENAME",
        version=log.latest_version(),
        table=statement.new_name.display,
        message=f"renamed {statement.target.display} to {statement.new_name.display}; "
        f"its files stay at {location}",
    )
