"""CREATE OR REPLACE TABLE and REPLACE TABLE [AS SELECT]: a new version of the same table.

As Delta does it, a replace is one commit on the existing log: a ``metaData`` action with
the new schema, partitioning and properties (the table id stays), a ``remove`` of every
live file, and the ``add``s of the new rows (AS SELECT). History is kept, so older
versions stay readable by time travel until VACUUM. The protocol is never downgraded: the
features the new definition needs are added to the ones the table already lists.

Conflicts: the replace reads the whole table under Serializable isolation, so any winner
that changed the table between our read and our commit fails it (even a blind INSERT,
whose file would otherwise survive the replace under the old schema); a concurrent writer
that loses to us sees our metadata change (MetadataChangedError).

``REPLACE TABLE`` needs the table to exist (TableNotFoundError); ``CREATE OR REPLACE``
creates it when it does not (operation name ``CREATE OR REPLACE TABLE [AS SELECT]``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from txsql.engine.write import write_data_files
from txsql.errors import SchemaError, TableExistsError, TableNotFoundError, TransactionError
from txsql.log.actions import Action, AddFile, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.protocol_upgrade import upgrade_note, with_features
from txsql.planner.context import RunContext
from txsql.planner.dml.column_defs import check_column_rules
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.metrics import WriteMetrics
from txsql.planner.operations.writes import (
    check_partition_columns,
    commit_write_result,
    create_operation,
    delete_files,
    run_create_table,
    schema_from_columns,
    table_definition,
)
from txsql.planner.sql.statements import CreateTable
from txsql.result import Result
from txsql.storage.paths import parse_location
from txsql.txn.isolation import IsolationLevel
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def run_create_or_replace(ctx: RunContext, statement: CreateTable, text: str) -> Result:
    """CREATE TABLE, or (with OR REPLACE / REPLACE) a replace of the existing table."""
    if not statement.replace:
        return run_create_table(ctx, statement, text)
    ref = statement.target
    if ctx.explicit is not None:
        raise TransactionError(
            f"{statement.replace} TABLE cannot run inside BEGIN ... COMMIT",
            hint="COMMIT or ROLLBACK first; a replace commits on its own.",
        )
    # catalog.exists, not the log alone: a renamed table's files may sit at this name's
    # managed place, and they are not this table.
    if not ctx.catalog.exists(ref):
        if statement.replace == "REPLACE":
            raise TableNotFoundError(
                f"cannot REPLACE TABLE {ref.display}: it does not exist",
                hint="Use CREATE OR REPLACE TABLE to create it when it is missing.",
            )
        try:
            return run_create_table(ctx, statement, text)
        except TableExistsError:
            if not ctx.catalog.exists(ref):
                raise  # e.g. a renamed table lives in the managed place
            # created meanwhile by someone else: replace theirs
    log = ctx.catalog.existing_log(ref)
    _check_location(statement, log)
    return replace_table(ctx, statement, text, log)


def replace_table(ctx: RunContext, statement: CreateTable, text: str, log: DeltaLog) -> Result:
    """Commit the new definition (and rows) of the existing table at ``log``."""
    txn = Transaction(
        log, isolation=IsolationLevel.SERIALIZABLE, max_attempts=ctx.max_commit_attempts
    )
    current = txn.snapshot()
    if current is None:
        raise TableNotFoundError(f"table {statement.target.display} does not exist")
    # Every live file is removed: any change to any of them since our read must conflict.
    txn.mark_read_whole_table()
    df: DataFrame | None = None
    if statement.query is not None:
        # A query over the table itself reads the pinned version, like the removes.
        df, _ = query_dataframe(ctx, statement.query, txn)
        schema_json = df.schema.jsonValue()
    else:
        schema_json = schema_from_columns(ctx, statement)
    check_partition_columns(statement, schema_json)
    if statement.columns:
        check_column_rules(
            ctx.spark, statement.columns, schema_json["fields"], statement.partition_columns
        )
    protocol, metadata = table_definition(statement, schema_json, current.metadata.id)
    protocol = merged_protocol(current.protocol, protocol)
    actions: list[Action] = []
    if protocol != current.protocol:
        actions.append(protocol)
    actions.append(metadata)
    actions.extend(f.to_remove(data_change=True) for f in current.files)
    adds: list[AddFile] = []
    try:
        if df is not None:
            adds = write_data_files(ctx.spark, df, log.table_root, metadata, protocol=protocol)
            actions.extend(adds)
        txn.stage(actions)
        metrics = None if df is None else WriteMetrics.of(adds)
        committed = ctx.commit(
            txn,
            create_operation(statement),
            _parameters(statement),
            metrics.delta() if metrics else {},
        )
    except BaseException:
        if txn.may_have_committed:
            raise  # the put failed midway: the new version may name our files
        delete_files(log.table_root, adds)  # never committed: nobody references them
        if txn.state == "open":
            txn.rollback()
        raise
    return commit_write_result(
        text,
        statement.target.display,
        committed,
        metrics,
        message=upgrade_note(current.protocol, protocol),
    )


def merged_protocol(current: Protocol, wanted: Protocol) -> Protocol:
    """``current`` plus the features ``wanted`` lists: a replace never downgrades."""
    merged = with_features(
        current, reader=wanted.reader_features or (), writer=wanted.writer_features or ()
    )
    if merged.reader_features is None and merged.writer_features is None:
        # Both legacy (no feature lists): the higher versions win.
        reader = max(merged.min_reader_version, wanted.min_reader_version)
        writer = max(merged.min_writer_version, wanted.min_writer_version)
        if (reader, writer) != (merged.min_reader_version, merged.min_writer_version):
            return Protocol(reader, writer)
    return merged


def _check_location(statement: CreateTable, log: DeltaLog) -> None:
    if statement.location is None:
        return
    wanted = parse_location(statement.location).root
    if wanted.rstrip("/") != parse_location(log.table_root).root.rstrip("/"):
        raise SchemaError(
            f"{statement.replace} TABLE {statement.target.display} cannot move the table: "
            f"it lives at {log.table_root}, not {wanted}",
            hint="Leave LOCATION out (the replace keeps the table where it is), or create "
            "a new table under another name at that location.",
        )


def _parameters(statement: CreateTable) -> dict[str, object]:
    return {
        "isManaged": json.dumps(statement.location is None),
        "description": statement.comment,
        "partitionBy": json.dumps(list(statement.partition_columns)),
        "properties": json.dumps(dict(statement.properties)),
    }


__all__ = ["merged_protocol", "replace_table", "run_create_or_replace"]
