"""CREATE TABLE [AS SELECT] and INSERT INTO: blind appends committed like Delta Spark."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from txsql.engine.charvarchar import length_metadata
from txsql.engine.schema import quote
from txsql.engine.write import write_data_files
from txsql.engine.write_rules import generated_high_water_marks
from txsql.errors import SchemaError, TableExistsError, TransactionError
from txsql.log import features, properties, protocol_upgrade, row_tracking
from txsql.log.actions import Action, AddFile, Metadata, Protocol
from txsql.log.column_rules import column_rules, with_high_water_marks
from txsql.log.deltalog import DeltaLog
from txsql.planner.catalog import check_location_empty, claim_location, release_location
from txsql.planner.context import RunContext
from txsql.planner.dml.column_defs import (
    check_column_rules,
    has_default_keyword,
    replace_default_keyword,
    require_defaults_feature,
    rule_metadata,
)
from txsql.planner.dml.conform import conform_to_schema
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.metrics import WriteMetrics
from txsql.planner.operations.alter import PROTOCOL_KEYS, apply_protocol_versions
from txsql.planner.operations.clustering import clustered_table
from txsql.planner.operations.columns import map_new_table
from txsql.planner.operations.widening import widen_for_insert
from txsql.planner.sql.statements import CreateTable, InsertInto
from txsql.result import Result
from txsql.storage.factory import delete_quietly
from txsql.storage.paths import data_file_path, parse_location
from txsql.txn.transaction import CommitResult, Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.log.snapshot import Snapshot


def run_create_table(ctx: RunContext, statement: CreateTable, text: str) -> Result:
    """CREATE TABLE [IF NOT EXISTS] [AS SELECT], atomic across processes.

    The version-0 commit (put-if-absent of ``00000000000000000000.json``) decides which of
    several racing CREATEs of one table wins; a loser raises TableExistsError (IF NOT
    EXISTS: does nothing) and its CTAS files are deleted, never committed. A named table
    is first claimed in the catalog (put-if-absent, see :meth:`Catalog.claim`), so two
    CREATEs of one name with different LOCATIONs cannot both succeed either.
    """
    ref = statement.target
    if ctx.explicit is not None:
        raise TransactionError(
            "CREATE TABLE cannot run inside BEGIN ... COMMIT",
            hint="COMMIT or ROLLBACK first; a transaction writes one existing table.",
        )
    if statement.location is not None:
        location = parse_location(statement.location).root
        if ref.name is not None:
            registered = ctx.catalog.registered_location(ref.name)
            default = DeltaLog.for_path(ctx.catalog.location(ref))
            if registered is None and ctx.catalog.exists(ref):  # (not a renamed table's)
                raise TableExistsError(
                    f"table {ref.display} already exists at {default.table_root}"
                )
    else:
        if ref.name is not None:
            ctx.catalog.check_default_location_free(ref)  # a renamed table may live there
        location = ctx.catalog.location(ref)
    log = DeltaLog.for_path(location)
    with Transaction(log, max_attempts=ctx.max_commit_attempts) as txn:
        # Pin "no table yet" before anything is written: the commit then goes to version 0
        # or fails; a CREATE never lands as a later version of someone else's table.
        if txn.snapshot() is not None:
            return _exists(statement, text, log)
        check_location_empty(location)
        df: DataFrame | None = None
        if statement.query is not None:
            df, _ = query_dataframe(ctx, statement.query)
            schema_json = df.schema.jsonValue()
        else:
            schema_json = schema_from_columns(ctx, statement)
        check_partition_columns(statement, schema_json)
        if statement.columns:
            check_column_rules(
                ctx.spark, statement.columns, schema_json["fields"], statement.partition_columns
            )
        protocol, metadata = table_definition(statement, schema_json, str(uuid.uuid4()))
        domains: list[Action] = []
        if statement.clustering:
            protocol, domain = clustered_table(
                protocol, metadata, statement.clustering, ref.display
            )
            domains.append(domain)
        actions: list[Action] = [protocol, metadata, *domains]
        claimed = False
        if ref.name is not None:
            try:
                claimed = ctx.catalog.claim(ref, location)
            except TableExistsError:
                if statement.if_not_exists:
                    return _exists(statement, text, DeltaLog.for_path(ctx.catalog.location(ref)))
                raise
        adds: list[AddFile] = []
        root_existed = True
        try:
            root_existed = claim_location(location)
            if df is not None:
                adds = write_data_files(ctx.spark, df, log.table_root, metadata, protocol=protocol)
                actions.extend(adds)
            operation = create_operation(statement)
            parameters = {
                "isManaged": json.dumps(statement.location is None),
                "description": statement.comment,
                "partitionBy": json.dumps(list(statement.partition_columns)),
                "properties": json.dumps(dict(statement.properties)),
            }
            if statement.clustering:
                parameters["clusterBy"] = json.dumps(list(statement.clustering))
            txn.stage(actions)
            metrics = None if df is None else WriteMetrics.of(adds)
            committed = txn.commit(operation, parameters, metrics.delta() if metrics else {})
        except BaseException as exc:
            if txn.may_have_committed:
                raise  # the put failed midway: the table may exist and name our files
            # Our files were never committed: nobody else can reference them.
            delete_files(log.table_root, adds)
            release_location(location, remove_root=not root_existed)
            if claimed:
                ctx.catalog.release(ref, location)
            if isinstance(exc, TableExistsError) and statement.if_not_exists:
                return _exists(statement, text, log)
            raise
    if ref.name is not None:
        ctx.catalog.claim(ref, location)  # idempotent; restores an entry a loser released
    return commit_write_result(
        text,
        ref.display,
        committed,
        metrics,
        message=protocol_upgrade.type_features_note(protocol, metadata),
    )


def table_definition(
    statement: CreateTable, schema_json: dict[str, Any], table_id: str
) -> tuple[Protocol, Metadata]:
    """The protocol and metadata a CREATE (or REPLACE) of ``statement`` writes."""
    configuration = {"delta.enableDeletionVectors": "true"}
    requested: dict[str, str] = {}
    for key, value in statement.properties:
        canonical = properties.canonical_key(key)
        checked = properties.validate_property(key, value)
        if canonical in PROTOCOL_KEYS:
            requested[canonical] = checked
        else:
            configuration[canonical] = checked
    configuration = row_tracking.with_column_names({}, configuration)
    # 'name' column mapping: ids and col-<uuid> physical names from the start.
    schema_json, configuration = map_new_table(schema_json, configuration)
    metadata = Metadata(
        id=table_id,
        schema_string=json.dumps(schema_json, separators=(",", ":")),
        partition_columns=statement.partition_columns,
        configuration=configuration,
        description=statement.comment,
        created_time=int(time.time() * 1000),
    )
    features.check_cdc_columns(metadata)
    protocol = protocol_upgrade.protocol_for_new_table(configuration)
    protocol = apply_protocol_versions(protocol, requested, metadata, new_table=True)
    # CHECK/NOT NULL/generated/identity columns list their writer features, and column
    # types theirs (TIMESTAMP_NTZ: timestampNtz).
    protocol = protocol_upgrade.upgrade_for_metadata(protocol, metadata)
    if any(c.default is not None for c in statement.columns):
        require_defaults_feature(protocol, statement.target.display)
    # Before any CTAS file is written: a type txsql cannot store is refused by name.
    features.check_writable(protocol, metadata)
    return protocol, metadata


def create_operation(statement: CreateTable) -> str:
    """Delta's operation name: CREATE [OR REPLACE] TABLE / REPLACE TABLE [AS SELECT]."""
    name = {"": "CREATE TABLE", "REPLACE": "REPLACE TABLE"}.get(
        statement.replace, "CREATE OR REPLACE TABLE"
    )
    return name + (" AS SELECT" if statement.query is not None else "")


def _exists(statement: CreateTable, text: str, log: DeltaLog) -> Result:
    """The table exists: IF NOT EXISTS does nothing, a plain CREATE fails."""
    ref = statement.target
    if not statement.if_not_exists:
        raise TableExistsError(f"table {ref.display} already exists at {log.table_root}")
    return Result(
        text,
        "CREATE TABLE",
        version=log.latest_version(),
        table=ref.display,
        message=f"{ref.display} already exists; nothing done",
    )


def delete_files(root: str, adds: list[AddFile]) -> None:
    for add in adds:
        delete_quietly(data_file_path(root, add.path))


def run_insert(ctx: RunContext, statement: InsertInto, text: str) -> Result:
    log = ctx.catalog.existing_log(statement.target)
    if statement.target.version is not None or statement.target.timestamp is not None:
        raise SchemaError(
            "cannot INSERT INTO a time-travel reference",
            hint="Write to the table itself (no VERSION/TIMESTAMP AS OF).",
        )
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    assert snapshot is not None
    # Refused by name before any file is written (a VARIANT column, a feature txsql
    # does not write), not after at the commit.
    features.check_writable(snapshot.protocol, snapshot.metadata, existing=snapshot.metadata)
    statement = _with_defaults(statement, snapshot.schema_json)
    source, _ = query_dataframe(ctx, _as_query(statement), txn)
    table = statement.target.display
    # A wider source type widens its column when the table and the session allow it; the
    # new schema commits with the rows (see widening.py).
    snapshot, message, guard = widen_for_insert(
        ctx.spark, txn, snapshot, source.schema.fields, statement.columns, table, text
    )
    df = conform_to_schema(source, snapshot.schema_json, statement.columns, table, inserting=True)
    if _is_values(statement):
        # A VALUES list is a handful of rows on the driver, which Spark spreads over one task
        # per core: a tiny file each (see ONE_TASK_ROWS).
        df = df.coalesce(1)
    with guard:
        adds = write_data_files(
            ctx.spark,
            df,
            snapshot.table_root,
            snapshot.metadata,
            identity=True,
            protocol=snapshot.protocol,
        )
    txn.stage([*adds, *_identity_marks(snapshot, adds, df.columns)])
    parameters = {"mode": "Append", "partitionBy": json.dumps(list(snapshot.partition_columns))}
    metrics = WriteMetrics.of(adds)
    committed = ctx.commit(txn, "WRITE", parameters, metrics.delta())
    return commit_write_result(text, table, committed, metrics, txn.read_version, message)


def append_dataframe(ctx: RunContext, log: DeltaLog, df: DataFrame, table: str) -> Result:
    """Blind-append ``df`` to ``log``'s table, columns matched by name like INSERT (cols).

    With an app id bound to ``ctx`` the check happens in ``ctx.transaction`` before any
    file is written.
    """
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    assert snapshot is not None
    features.check_writable(
        snapshot.protocol, snapshot.metadata, existing=snapshot.metadata
    )  # before any file
    text = f"append to {table}"
    columns = list(df.columns)
    snapshot, message, guard = widen_for_insert(
        ctx.spark, txn, snapshot, df.schema.fields, columns, table, text
    )
    conformed = conform_to_schema(df, snapshot.schema_json, columns, table, inserting=True)
    root, metadata = snapshot.table_root, snapshot.metadata
    with guard:
        adds = write_data_files(
            ctx.spark, conformed, root, metadata, identity=True, protocol=snapshot.protocol
        )
    txn.stage([*adds, *_identity_marks(snapshot, adds, conformed.columns)])
    parameters = {"mode": "Append", "partitionBy": json.dumps(list(snapshot.partition_columns))}
    metrics = WriteMetrics.of(adds)
    committed = ctx.commit(txn, "WRITE", parameters, metrics.delta())
    return commit_write_result(text, table, committed, metrics, txn.read_version, message)


def _with_defaults(statement: InsertInto, schema_json: dict[str, Any]) -> InsertInto:
    """``VALUES (..., DEFAULT)``: the keyword replaced by the column's default."""

    query = statement.query
    if not (isinstance(query, exp.Values) and has_default_keyword(query)):
        return statement
    columns = statement.columns or tuple(f["name"] for f in schema_json["fields"])
    values = replace_default_keyword(query, columns, schema_json, statement.target.display)
    return replace(statement, query=values)


def _identity_marks(snapshot: Snapshot, adds: list[AddFile], written: list[str]) -> list[Action]:
    """The metadata moving the high-water mark of identity columns this write filled in.

    Committed with the data: two writers handing out identity values then both change the
    metadata, so the checker fails the second (MetadataChangedError) instead of letting
    duplicate values in.
    """
    given = {c.lower() for c in written}
    generated = [
        spec.column
        for spec in column_rules(snapshot.metadata).identity
        if spec.column.lower() not in given
    ]
    if not generated or not adds:
        return []
    marks = generated_high_water_marks(snapshot.table_root, adds, snapshot.metadata, generated)
    if not marks:
        return []
    return [with_high_water_marks(snapshot.metadata, marks)]


def _is_values(statement: InsertInto) -> bool:
    return isinstance(statement.query, exp.Values)


def _as_query(statement: InsertInto) -> Any:
    query = statement.query
    if isinstance(query, exp.Values):
        return exp.select("*").from_(query.copy())
    return query


def schema_from_columns(ctx: RunContext, statement: CreateTable) -> dict[str, Any]:
    if not statement.columns:
        raise SchemaError(
            f"CREATE TABLE {statement.target.display} needs columns or AS SELECT",
            hint="e.g. CREATE TABLE t (id BIGINT, name STRING)",
        )
    # Spark parses the types, so every Spark type spelling is accepted exactly as Spark does.
    select = ", ".join(f"{c.typed_null()} AS {quote(c.name)}" for c in statement.columns)
    fields = ctx.spark.sql(f"SELECT {select}").schema.jsonValue()["fields"]
    for field, column in zip(fields, statement.columns):
        field["nullable"] = column.nullable
        if column.comment is not None:
            field["metadata"] = {**field.get("metadata", {}), "comment": column.comment}
        lengths = length_metadata(column.name, column.type_sql)
        if lengths:  # VARCHAR(n): a string column whose length every write checks
            field["metadata"] = {**field.get("metadata", {}), **lengths}
        ruled = rule_metadata(column)
        if ruled:  # GENERATED / IDENTITY / DEFAULT: computed and checked by every write
            field["metadata"] = {**field.get("metadata", {}), **ruled}
    return {"type": "struct", "fields": fields}


def check_partition_columns(statement: CreateTable, schema_json: dict[str, Any]) -> None:
    names = [f["name"] for f in schema_json["fields"]]
    missing = [p for p in statement.partition_columns if p not in names]
    if missing:
        raise SchemaError(
            f"partition column(s) {', '.join(missing)} are not columns of the table",
            hint=f"Partition by some of: {', '.join(names)}.",
        )
    if len(statement.partition_columns) >= len(names) and names:
        raise SchemaError(
            "cannot partition by every column", hint="Leave at least one data column."
        )


def commit_write_result(
    text: str,
    table: str,
    committed: CommitResult | None,
    written: WriteMetrics | None,
    read_version: int | None = None,
    message: str = "",
) -> Result:
    metrics = {} if written is None else written.shown()
    if committed is None:  # staged in an explicit transaction; COMMIT writes it
        return Result(
            text,
            "WRITE",
            read_version=read_version,
            table=table,
            metrics=metrics,
            message="staged; COMMIT to write it",
        )
    info = committed.commit_info
    return Result(
        text,
        info.operation or "",
        version=committed.version,
        read_version=committed.read_version,
        table=table,
        metrics=metrics,
        operation_metrics=dict(info.operation_metrics or {}),
        message=message,
    )
