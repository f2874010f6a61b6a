"""DROP TABLE: unregister the name, then (managed tables only) delete the table's files.

Order, chosen so that a DROP racing a reader or writer, or one that crashes half way, never
leaves something that looks like a valid table with rows silently missing:

1. Unregister the name (delete its catalog entry): from here on the name resolves to
   nothing, and a new CREATE of it may start.
2. Break the log: delete ``_last_checkpoint``, every checkpoint and the oldest commit, so
   the remaining log has no starting point. Any reader (also one addressing the
   directory by path) now gets CorruptLogError instead of a snapshot whose files vanish.
3. Delete the data files (and deletion vector files and empty partition directories).
4. Delete what is left of ``_delta_log``, then the table directory: the log goes last.

A writer that commits between 2 and 4 gets its commit deleted with the table, as with a
writer racing a DROP in Delta; one that commits after 4 leaves a lone commit file behind
(no protocol or metadata: CorruptLogError on read, and DROP can be run again on the
path's name). External tables (registered with LOCATION) are only unregistered (step 1),
as in Spark: their files belong to whoever owns the location.
"""

from __future__ import annotations

import contextlib
import os

from txsql.errors import (
    CorruptLogError,
    SchemaNotFoundError,
    SqlError,
    TableNotFoundError,
    TransactionError,
)
from txsql.log.deltalog import DeltaLog
from txsql.planner.catalog import Catalog
from txsql.planner.context import RunContext
from txsql.planner.sql.ddl_statements import DropTable
from txsql.planner.sql.refs import TableRef
from txsql.result import Result
from txsql.storage.paths import LOG_DIR, classify_log_file, join, parse_location


def run_drop_table(ctx: RunContext, statement: DropTable, text: str) -> Result:
    refuse_in_transaction(ctx, "DROP TABLE")
    ref = statement.target
    try:
        found = ctx.catalog.exists(ref)
    except SchemaNotFoundError:
        if not statement.if_exists:
            raise
        found = False
    if not found:
        if statement.if_exists:
            _forget_stale_entry(ctx.catalog, ref)
            return Result(
                text, "DROP TABLE", table=ref.display, message=f"{ref.display} does not exist"
            )
        raise TableNotFoundError(f"table {ref.display} does not exist")
    managed, location, version = drop_table(ctx.catalog, ref)
    what = "its files were deleted" if managed else f"its files at {location} were kept"
    kind = "managed" if managed else "external"
    return Result(
        text,
        "DROP TABLE",
        version=version,
        table=ref.display,
        message=f"dropped {kind} table {ref.display}; {what}",
    )


def drop_table(catalog: Catalog, ref: TableRef) -> tuple[bool, str, int | None]:
    """Drop an existing table; returns (managed, location, its last version)."""
    managed = catalog.is_managed(ref)
    location = catalog.location(ref)
    try:
        version = catalog.log(ref).latest_version()
    except CorruptLogError:
        version = None  # a DROP that crashed half way broke the log: finish the job
    catalog.unregister(ref)
    if managed:
        delete_table_files(location)
        catalog.forget(location)
    return managed, location, version


def delete_table_files(location: str) -> None:
    """Delete a managed table's files in the order the module docstring explains.

    Through the table's FileIO, so it works on object stores too; local directories
    left empty are removed at the end.
    """
    log = DeltaLog.for_path(location)
    store = log.store
    listing = store.list_log()
    kinds = {s.name: classify_log_file(s.name) for s in listing}
    commits = sorted((k.version, n) for n, k in kinds.items() if k and k.kind == "commit")
    breakers = [n for n in kinds if n == "_last_checkpoint"]
    breakers += [n for n, k in kinds.items() if k is not None and k.kind != "commit"]
    breakers += [name for _, name in commits[:1]]
    for name in breakers:
        with contextlib.suppress(FileNotFoundError):
            store.delete_log_file(name)
    root = log.table_root
    files = [f.name for f in store.fs.list_tree(root)]
    log_prefix = LOG_DIR + "/"
    for name in [n for n in files if not n.startswith(log_prefix)] + [
        n for n in files if n.startswith(log_prefix)
    ]:
        with contextlib.suppress(FileNotFoundError):
            store.fs.delete(join(root, name))
    if parse_location(root).is_local:
        _remove_empty_directories(root)


def _remove_empty_directories(root: str) -> None:
    for directory, _, _ in os.walk(root, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _forget_stale_entry(catalog: Catalog, ref: TableRef) -> None:
    """IF EXISTS on a name registered for a location with no table (a crashed CREATE)."""
    with contextlib.suppress(SchemaNotFoundError):
        if catalog.registered_location(ref.name or "") is not None:
            catalog.unregister(ref)


def refuse_in_transaction(ctx: RunContext, statement: str) -> None:
    """Catalog changes are not transactional: refuse them between BEGIN and COMMIT, and
    in an exactly-once call (no table log records their app version)."""
    if ctx.app is not None:
        raise SqlError(
            f"{statement} cannot be exactly-once (app_id/app_version): it changes the "
            "catalog, where no app version is recorded",
            hint="Run it without app_id; IF EXISTS / IF NOT EXISTS make a re-run harmless.",
        )
    if ctx.explicit is not None:
        raise TransactionError(
            f"{statement} cannot run inside BEGIN ... COMMIT",
            hint="COMMIT or ROLLBACK first: catalog changes take effect at once and cannot "
            "be rolled back.",
        )
