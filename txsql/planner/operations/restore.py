"""RESTORE TABLE t TO VERSION AS OF n | TIMESTAMP AS OF ts (Delta's RestoreTableCommand).

The commit re-adds the files of the target version that are not live now and removes the
live files the target version did not have, both with ``dataChange=true``; logical files
are compared by (path, deletion vector id), so a file whose DV changed since is swapped back
to its old DV. The target's metadata comes back too (schema, properties); the protocol is
never downgraded. Restoring needs every file of the target version still on disk: if VACUUM
deleted some, the statement fails and names them.
"""

from __future__ import annotations

import json
from dataclasses import replace

from txsql.errors import RestoreError, VersionNotFoundError
from txsql.log.actions import Action, AddFile, Protocol
from txsql.log.protocol_upgrade import upgrade_for_metadata, with_features
from txsql.log.snapshot import Snapshot
from txsql.planner.catalog import timestamp_ms
from txsql.planner.context import RunContext
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.metrics import RestoreMetrics
from txsql.planner.sql.command_statements import RestoreTable
from txsql.result import Result
from txsql.storage.factory import file_io_for
from txsql.storage.paths import parse_location, resolve_in_root
from txsql.txn.readset import norm_path


def run_restore(ctx: RunContext, statement: RestoreTable, text: str) -> Result:
    log = ctx.catalog.existing_log(statement.target)
    txn = ctx.transaction(log)
    current = txn.current_snapshot()
    assert current is not None
    if statement.version is not None:
        target = log.snapshot(statement.version)
    else:
        assert statement.timestamp is not None
        target = log.snapshot_at_timestamp(timestamp_ms(statement.timestamp, ctx.spark))
    if target.version > current.version:
        raise VersionNotFoundError(
            f"cannot restore {statement.target.display} to version {target.version}: the "
            f"latest version is {current.version}"
        )
    live = {(norm_path(f.path), f.dv_id): f for f in current.files}
    wanted = {(norm_path(f.path), f.dv_id): f for f in target.files}
    to_add = [f for key, f in wanted.items() if key not in live]
    to_remove = [f for key, f in live.items() if key not in wanted]
    _check_files_exist(target, to_add, statement.target.display)
    # Every live file counts as read: a concurrent change to any of them must conflict.
    txn.mark_read_whole_table()
    actions: list[Action] = []
    protocol = _merged_protocol(current, target)
    if protocol != current.protocol:
        actions.append(protocol)
    if target.metadata != current.metadata:
        actions.append(target.metadata)
    actions.extend(f.to_remove(data_change=True) for f in to_remove)
    actions.extend(_readd(f) for f in to_add)
    txn.stage(actions)
    metrics = RestoreMetrics(
        table_size_after_restore=sum(f.size for f in target.files),
        num_of_files_after_restore=len(target.files),
        num_removed_files=len(to_remove),
        num_restored_files=len(to_add),
        removed_files_size=sum(f.size for f in to_remove),
        restored_files_size=sum(f.size for f in to_add),
    )
    parameters = {
        "version": json.dumps(target.version if statement.timestamp is None else None),
        "timestamp": json.dumps(statement.timestamp),
    }
    committed = ctx.commit(txn, "RESTORE", parameters, metrics.delta())
    return commit_result(
        text,
        statement.target.display,
        "RESTORE",
        committed,
        txn.read_version,
        metrics.shown(),
        message=f"restored to version {target.version}",
    )


def _readd(add: AddFile) -> AddFile:
    return replace(add, data_change=True)


def _merged_protocol(current: Snapshot, target: Snapshot) -> Protocol:
    """The current protocol plus any table feature the target version listed (never fewer).

    Legacy protocol versions imply features the table may not use; only explicitly listed
    ones are carried over so restoring an old version does not add features needlessly.
    """
    old = target.protocol
    merged = with_features(
        current.protocol, reader=old.reader_features or (), writer=old.writer_features or ()
    )
    # The restored schema's types need their features even if that version lacked them.
    return upgrade_for_metadata(merged, target.metadata)


def _check_files_exist(target: Snapshot, files: list[AddFile], table: str) -> None:
    root = parse_location(target.table_root).root
    fs = file_io_for(root)
    missing: list[str] = []
    for f in files:
        paths = [resolve_in_root(root, f.path)]
        if f.deletion_vector is not None:
            dv = f.deletion_vector.absolute_path(root)
            if dv is not None:
                paths.append(dv)
        missing.extend(p for p in paths if not fs.exists(p))
    if missing:
        shown = ", ".join(p.removeprefix(root.rstrip("/") + "/") for p in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise RestoreError(
            f"cannot restore {table} to version {target.version}: {len(missing)} file(s) it "
            f"needs were deleted (by VACUUM?): {shown}{more}"
        )
