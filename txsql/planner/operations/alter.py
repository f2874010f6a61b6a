"""ALTER TABLE ... SET / UNSET TBLPROPERTIES and ADD COLUMNS: metadata-only commits.

Property values are validated and canonicalised by :mod:`txsql.log.properties` (unknown
``delta.`` keys are refused, user keys are stored as given). Turning on a property that
needs a table feature upgrades the protocol in the same commit (``deletionVectors`` for
``delta.enableDeletionVectors``, ``appendOnly`` for ``delta.appendOnly``, ...); unsetting
never downgrades it, as in Delta.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from txsql.engine.charvarchar import length_metadata
from txsql.errors import InvalidTablePropertyError, SchemaError
from txsql.log import features, properties, protocol_upgrade, row_tracking
from txsql.log.actions import Action, AddFile, Metadata, Protocol
from txsql.log.predicates import TRUE
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.operations.columns import enable_mapping, map_new_fields
from txsql.planner.sql.command_statements import (
    AlterAddColumns,
    AlterSetProperties,
    AlterUnsetProperties,
)
from txsql.planner.sql.refs import ColumnSpec
from txsql.result import Result
from txsql.txn.multitable.coordinator import coordinator_for
from txsql.txn.prepared.records import undecided
from txsql.txn.transaction import Transaction

P = properties.TableProperties
MIN_READER = "delta.minReaderVersion"
MIN_WRITER = "delta.minWriterVersion"
PROTOCOL_KEYS = frozenset({MIN_READER, MIN_WRITER})


def run_set_properties(ctx: RunContext, statement: AlterSetProperties, text: str) -> Result:
    txn, metadata, protocol = _begin(ctx, statement.target)
    given: dict[str, str] = {}
    requested: dict[str, str] = {}
    for key, value in statement.properties:
        canonical = properties.canonical_key(key)
        checked = properties.validate_property(key, value)
        # Protocol versions are not properties: they upgrade the protocol action.
        (requested if canonical in PROTOCOL_KEYS else given)[canonical] = checked
    configuration = {**metadata.configuration, **given}
    if properties.in_commit_timestamps_enabled(given) and not (
        properties.in_commit_timestamps_enabled(metadata.configuration)
    ):
        # Delta records from which version on commit timestamps are in-commit ones.
        version = (txn.read_version or 0) + 1
        configuration[P.IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION] = str(version)
        configuration[P.IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP] = str(int(time.time() * 1000))
    configuration = row_tracking.with_column_names(metadata.configuration, configuration)
    # none -> name: every column gets an id and keeps its name as the physical name.
    configuration, schema_string = enable_mapping(metadata, configuration, metadata.schema_string)
    new_metadata = replace(metadata, configuration=configuration, schema_string=schema_string)
    actions: list[Action] = []
    if schema_string != metadata.schema_string and requested:
        # Delta's documented idiom enables mapping with reader 2 / writer 5, which already
        # imply columnMapping: versions first, so a legacy table stays legacy.
        upgraded = apply_protocol_versions(protocol, requested, new_metadata)
        upgraded = upgrade_protocol(upgraded, configuration)
    else:
        upgraded = upgrade_protocol(protocol, configuration)
        upgraded = apply_protocol_versions(upgraded, requested, new_metadata)
    # A table whose column types lack their feature (written before txsql listed it) is
    # repaired by any property change, as a CREATE would have listed it.
    upgraded = protocol_upgrade.upgrade_for_metadata(upgraded, new_metadata)
    if upgraded != protocol:
        actions.append(upgraded)
    features.check_cdc_columns(new_metadata)
    _refuse_leaving_while_prepared(txn, metadata, configuration, statement.target.display)
    actions.append(new_metadata)
    actions += _row_tracking_backfill(txn, metadata.configuration, configuration)
    txn.stage(actions)
    parameters = {"properties": json.dumps({**given, **requested})}
    committed = ctx.commit(txn, "SET TBLPROPERTIES", parameters, {})
    note = protocol_upgrade.upgrade_note(protocol, upgraded)
    return commit_result(
        text,
        statement.target.display,
        "SET TBLPROPERTIES",
        committed,
        txn.read_version,
        message=note if committed is not None else "",
    )


def _row_tracking_backfill(
    txn: Transaction, old: dict[str, str], new: dict[str, str]
) -> list[AddFile]:
    """Turning ``delta.enableRowTracking`` on gives the table's existing rows their ids in
    the same commit: every live file without ids is committed again (see
    :func:`row_tracking.backfill`). The whole table counts as read, so a concurrent DML
    that changed a file conflicts instead of having its change overwritten."""
    if not row_tracking.enabled(new) or row_tracking.enabled(old):
        return []
    snapshot = txn.current_snapshot()
    files = list(snapshot.files) if snapshot is not None else []
    again = row_tracking.backfill(files)
    if again:
        txn.record_scan(TRUE, files)
    return again


def run_unset_properties(ctx: RunContext, statement: AlterUnsetProperties, text: str) -> Result:
    txn, metadata, _ = _begin(ctx, statement.target)
    configuration = dict(metadata.configuration)
    by_lower = {k.lower(): k for k in configuration}
    missing = []
    for key in statement.keys:
        present = by_lower.get(properties.canonical_key(key).lower())
        if present is not None and present.lower().startswith("delta.columnmapping."):
            # The data files use physical names: forgetting them would lose the columns.
            raise InvalidTablePropertyError(
                f"cannot unset {present}: the table's data files depend on column mapping",
                hint="Column mapping cannot be turned off in place; copy the table with "
                "CREATE TABLE ... AS SELECT to get a table without it.",
            )
        if present is None:
            missing.append(key)
        else:
            del configuration[present]
    if missing and not statement.if_exists:
        raise InvalidTablePropertyError(
            f"cannot unset {', '.join(repr(k) for k in missing)}: not set on "
            f"{statement.target.display}",
            hint="Use UNSET TBLPROPERTIES IF EXISTS to ignore absent keys.",
        )
    _refuse_leaving_while_prepared(txn, metadata, configuration, statement.target.display)
    txn.stage([replace(metadata, configuration=configuration)])
    parameters = {"properties": json.dumps(list(statement.keys)), "ifExists": statement.if_exists}
    committed = ctx.commit(txn, "UNSET TBLPROPERTIES", parameters, {})
    return commit_result(
        text, statement.target.display, "UNSET TBLPROPERTIES", committed, txn.read_version
    )


def run_add_columns(ctx: RunContext, statement: AlterAddColumns, text: str) -> Result:
    txn, metadata, protocol = _begin(ctx, statement.target)
    schema = json.loads(metadata.schema_string)
    existing = {f["name"].lower() for f in schema["fields"]}
    seen: set[str] = set()
    for column in statement.columns:
        lowered = column.name.lower()
        if lowered in existing or lowered in seen:
            raise SchemaError(
                f"column {column.name} already exists in {statement.target.display}",
                hint="Pick a new name; ADD COLUMNS only adds columns.",
            )
        if column.generated is not None or column.identity is not None or column.default:
            # Old rows would hold NULL, not the computed value (Delta refuses these too).
            raise SchemaError(
                f"cannot add column {column.name} with a GENERATED, IDENTITY or DEFAULT "
                "clause to an existing table",
                hint="Add it as a plain column; for a default, then run ALTER TABLE t ALTER "
                f"COLUMN {column.name} SET DEFAULT expr.",
            )
        if not column.nullable:
            # Old files hold no value for the column: it must be nullable (Delta's rule).
            raise SchemaError(
                f"cannot add NOT NULL column {column.name} to an existing table",
                hint="Add it as nullable; old rows read NULL.",
            )
        seen.add(lowered)
    fields, configuration = map_new_fields(metadata, new_fields(ctx, statement.columns))
    schema["fields"] = [*schema["fields"], *fields]
    schema_string = json.dumps(schema, separators=(",", ":"))
    new_metadata = replace(metadata, schema_string=schema_string, configuration=configuration)
    # A TIMESTAMP_NTZ column brings its table feature along, in the same commit.
    upgraded = protocol_upgrade.upgrade_for_metadata(protocol, new_metadata)
    features.check_writable(upgraded, new_metadata, existing=metadata)
    txn.stage([upgraded, new_metadata] if upgraded != protocol else [new_metadata])
    parameters = {"columns": json.dumps([{"column": f} for f in fields])}
    committed = ctx.commit(txn, "ADD COLUMNS", parameters, {})
    note = protocol_upgrade.upgrade_note(protocol, upgraded)
    return commit_result(
        text,
        statement.target.display,
        "ADD COLUMNS",
        committed,
        txn.read_version,
        message=note if committed is not None else "",
    )


def new_fields(ctx: RunContext, columns: tuple[ColumnSpec, ...]) -> list[dict[str, Any]]:
    """Spark StructField JSON for column specs (Spark parses every type spelling)."""
    select = ", ".join(f"{c.typed_null()} AS `{c.name}`" for c in columns)
    fields: list[dict[str, Any]] = ctx.spark.sql(f"SELECT {select}").schema.jsonValue()["fields"]
    for field, column in zip(fields, columns):
        field["nullable"] = True
        field["metadata"] = {"comment": column.comment} if column.comment is not None else {}
        field["metadata"].update(length_metadata(column.name, column.type_sql))
    return fields


def apply_protocol_versions(
    protocol: Protocol,
    requested: Mapping[str, str],
    metadata: Metadata,
    *,
    new_table: bool = False,
) -> Protocol:
    """``protocol`` upgraded to the ``delta.minReaderVersion``/``minWriterVersion`` asked for.

    Delta treats these keys as a protocol upgrade, never as stored properties. A lower
    version than the table has is a downgrade and refused (for a ``new_table`` the
    versions its features need win, as in Delta); a version whose implied features txsql
    cannot write is refused by :func:`features.check_writable`.

    Raises:
        InvalidTablePropertyError: a downgrade, or reader version 3 without writer 7.
        UnsupportedFeatureError: the upgraded protocol needs features txsql cannot write.
    """
    if not requested:
        return protocol
    reader = int(requested.get(MIN_READER, protocol.min_reader_version))
    writer = int(requested.get(MIN_WRITER, protocol.min_writer_version))
    if new_table:
        reader = max(reader, protocol.min_reader_version)
        writer = max(writer, protocol.min_writer_version)
    for key, wanted, current in (
        (MIN_READER, reader, protocol.min_reader_version),
        (MIN_WRITER, writer, protocol.min_writer_version),
    ):
        if wanted < current:
            raise InvalidTablePropertyError(
                f"cannot set {key} to {wanted}: the table's protocol is already at "
                f"{current} and Delta protocols are never downgraded",
                hint=f"Leave {key} out, or use {current} or higher.",
            )
        if wanted > (features.MAX_READER_VERSION if key == MIN_READER else 7):
            raise InvalidTablePropertyError(
                f"{key} = {wanted} is not a Delta protocol version",
                hint="Reader versions go up to 3, writer versions up to 7.",
            )
    if reader >= 3 and writer < 7:
        raise InvalidTablePropertyError(
            f"{MIN_READER} = 3 needs {MIN_WRITER} = 7 (table features)",
            hint=f"Set both: '{MIN_READER}' = '3', '{MIN_WRITER}' = '7'.",
        )
    if reader == 2 and writer < 5:
        raise InvalidTablePropertyError(
            f"{MIN_READER} = 2 needs {MIN_WRITER} = 5 or higher (column mapping)",
            hint=f"Set '{MIN_WRITER}' = '5' too, or use reader 3 with writer 7.",
        )
    upgraded = protocol
    if writer >= 7 and protocol.min_writer_version < 7:
        # Legacy versions imply feature sets; version 7 lists them explicitly.
        implied = sorted(features.writer_features(protocol))
        upgraded = Protocol(
            protocol.min_reader_version, 7, protocol.reader_features, tuple(implied), protocol.extra
        )
    elif writer > protocol.min_writer_version:
        upgraded = replace(upgraded, min_writer_version=writer)
    if reader > upgraded.min_reader_version:
        reader_list = tuple(sorted(features.reader_features(upgraded))) if reader >= 3 else None
        upgraded = replace(upgraded, min_reader_version=reader, reader_features=reader_list)
    features.check_writable(upgraded, metadata, existing=metadata)
    return upgraded


def upgrade_protocol(protocol: Protocol, configuration: dict[str, str]) -> Protocol:
    """``protocol`` with every feature the configuration turns on (never removes any).

    Raises:
        UnsupportedFeatureError: the configuration asks for a feature txsql cannot write.
    """
    return protocol_upgrade.with_features(
        protocol, writer=protocol_upgrade.features_for_properties(configuration)
    )


def _refuse_leaving_while_prepared(
    txn: Transaction, metadata: Metadata, configuration: Mapping[str, str], display: str
) -> None:
    """A table leaves multi-table transactions only when no prepared transaction writes it:
    leaving changes its metadata, which would roll back every such transaction at COMMIT
    PREPARED. (One prepared after this check still meets that conflict, with its error.)"""
    coordinator = coordinator_for(txn.table_root, metadata.configuration)
    if coordinator is None or features.multi_table_enrolled(configuration):
        return
    pending = [
        r.transaction_id
        for r in undecided(coordinator)
        if any(p.table_id == metadata.id for p in r.participants)
    ]
    if pending:
        ids = ", ".join(repr(i) for i in sorted(pending))
        raise InvalidTablePropertyError(
            f"{display} cannot leave multi-table transactions: prepared transaction(s) {ids} "
            "write it and are not decided yet",
            hint=f"Run COMMIT PREPARED or ROLLBACK PREPARED for {ids} (SHOW TRANSACTIONS lists "
            "them), then run the ALTER again.",
        )


def _begin(ctx: RunContext, target: Any) -> tuple[Transaction, Metadata, Protocol]:
    txn, snapshot = ctx.begin_alter(target)
    return txn, snapshot.metadata, snapshot.protocol
