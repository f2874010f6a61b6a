"""CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE src [VERSION | TIMESTAMP AS OF].

A DEEP clone copies every data and DV file of the source version under the clone's root
(fresh names, relative paths; ``isShallow`` false): it shares nothing with the source.

A shallow clone is a new log whose files are the source's, as Delta writes it: one commit
with operation ``CLONE`` (parameters ``source``, ``sourceVersion``, ``isShallow``), the
source's protocol, its schema / partitioning / properties (plus TBLPROPERTIES overrides)
under a new table id, and one ``add`` per source file whose path is the file's ABSOLUTE
URI; deletion vectors stored next to the source (``u``) become absolute (``p``)
descriptors. Row-tracking fields are dropped. Later writes to the clone go under the
clone's own root (relative paths); a DELETE on a source file writes its DV in the clone.

VACUUM and clones (see :mod:`txsql.planner.operations.vacuum`):

* the clone's VACUUM walks only the clone's root, so it never deletes a source file;
* the source's VACUUM keeps every file a live clone's log names. For that the clone is
  recorded next to the source, ``<source>/_txsql_clones/<uuid>.json`` (put-if-absent),
  BEFORE the clone's commit: a VACUUM running meanwhile already sees it. The entry names
  the clone's root and the source version it copied. An entry whose clone has no log
  (being created, or gone) protects that source version's files for
  :data:`PENDING_CLONE_MS`; a clone removed from disk stops protecting anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from txsql.dv.descriptor import DeletionVectorDescriptor, dv_file_name
from txsql.errors import SchemaError, TableExistsError, TableNotFoundError, TransactionError
from txsql.log import features, properties, protocol_upgrade
from txsql.log.actions import Action, AddFile, Metadata
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.catalog import check_location_empty, claim_location, release_location
from txsql.planner.context import RunContext
from txsql.planner.metrics import CloneMetrics
from txsql.planner.operations.alter import PROTOCOL_KEYS
from txsql.planner.operations.replace import merged_protocol
from txsql.planner.sql.statements import CloneTable
from txsql.result import Result
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.paths import data_file_path, parse_location
from txsql.txn.isolation import IsolationLevel
from txsql.txn.transaction import CommitResult, Transaction

CLONES_DIR = "_txsql_clones"
PENDING_CLONE_MS = 24 * 3_600_000
"""How long an entry whose clone has no log yet protects the source version's files."""


def run_clone(ctx: RunContext, statement: CloneTable, text: str) -> Result:
    ref = statement.target
    if ctx.explicit is not None:
        raise TransactionError(
            "CREATE TABLE ... CLONE cannot run inside BEGIN ... COMMIT",
            hint="COMMIT or ROLLBACK first; a clone commits on its own.",
        )
    source = ctx.catalog.snapshot(statement.source, ctx.spark)
    source_root = parse_location(source.table_root).path
    if statement.location is None and ref.name is not None:
        ctx.catalog.check_default_location_free(ref)  # a renamed table may live there
    location = (
        parse_location(statement.location).path
        if statement.location is not None
        else ctx.catalog.location(ref)
    )
    _check_not_nested(source_root, location)
    log = DeltaLog.for_path(location)
    if log.exists():
        if statement.if_not_exists:
            return Result(
                text,
                "CLONE",
                version=log.latest_version(),
                table=ref.display,
                message=f"{ref.display} already exists; nothing done",
            )
        if not statement.replace:
            raise TableExistsError(f"table {ref.display} already exists at {log.table_root}")
    elif statement.replace == "REPLACE":
        raise TableNotFoundError(
            f"cannot REPLACE TABLE {ref.display}: it does not exist (looked in {location})",
            hint="Use CREATE OR REPLACE TABLE ... SHALLOW CLONE to create it.",
        )
    txn = Transaction(
        log, isolation=IsolationLevel.SERIALIZABLE, max_attempts=ctx.max_commit_attempts
    )
    current = txn.snapshot()  # pins "no table" for a create: the commit lands at version 0
    if current is None:
        check_location_empty(location)
    else:
        txn.mark_read_whole_table()
    metadata = _metadata(statement, source, current)
    protocol = (
        source.protocol if current is None else merged_protocol(current.protocol, source.protocol)
    )
    # A source written before its column types listed their features gets them here.
    protocol = protocol_upgrade.upgrade_for_metadata(protocol, metadata)
    features.check_writable(protocol, metadata, existing=source.metadata)
    actions: list[Action] = []
    if current is None or protocol != current.protocol:
        actions.append(protocol)
    actions.append(metadata)
    if current is not None:
        actions.extend(f.to_remove(data_change=True) for f in current.files)
    # A shallow clone is registered next to the source before it commits (see above).
    entry = register_clone(source_root, location, source.version) if statement.shallow else None
    claimed = root_existed = False
    copies = DeepCopy(source_root, location)
    try:
        if current is None:
            root_existed = claim_location(location)
            if ref.name is not None:
                claimed = ctx.catalog.claim(ref, location)
        if statement.shallow:
            actions.extend(clone_add(f, source_root) for f in source.files)
        else:
            actions.extend(copies.copy(f) for f in source.files)
        txn.stage(actions)
        metrics = _metrics(source, copies).delta()
        committed = ctx.commit(txn, "CLONE", _parameters(statement, source), metrics)
    except BaseException:
        if txn.may_have_committed:
            raise  # the put failed midway: the clone may exist and name its copies
        copies.delete()  # never committed: nobody references the copies
        if entry is not None:
            with contextlib.suppress(OSError):
                os.unlink(entry)
        if current is None:
            release_location(location, remove_root=not root_existed)
            if claimed:
                ctx.catalog.release(ref, location)
        if txn.state == "open":
            txn.rollback()
        raise
    return _result(text, ref.display, committed, source)


def clone_add(add: AddFile, source_root: str) -> AddFile:
    """The source's ``add`` as the clone records it: absolute URIs, no row-tracking ids."""
    dv = add.deletion_vector
    if dv is not None and dv.storage_type == "u":
        located = dv.absolute_path(source_root)
        assert located is not None
        dv = replace(dv, storage_type="p", path_or_inline_dv=Path(located).as_uri())
    return replace(
        add,
        path=absolute_uri(source_root, add.path),
        data_change=True,
        deletion_vector=dv,
        base_row_id=None,
        default_row_commit_version=None,
    )


class DeepCopy:
    """DEEP CLONE: each source file (and DV file) copied under the clone's root.

    Copies get fresh names (a UUID prefix; DV files a new UUID), so replacing a table with
    a clone of the same source never overwrites a file an older version still names.
    """

    def __init__(self, source_root: str, clone_root: str) -> None:
        self.source_root = source_root
        self.clone_root = clone_root
        self.written: list[str] = []
        self.data_files = 0
        self.bytes = 0
        self._dv_files: dict[str, uuid.UUID] = {}

    def copy(self, add: AddFile) -> AddFile:
        source = data_file_path(self.source_root, add.path)
        relative = unquote(add.path) if not urlparse(add.path).scheme else ""
        directory = os.path.dirname(relative)
        name = f"{uuid.uuid4().hex[:12]}-{os.path.basename(source)}"
        self._copy(source, os.path.join(self.clone_root, directory, name))
        self.data_files += 1
        self.bytes += add.size
        dv = add.deletion_vector
        if dv is not None and dv.storage_type in ("u", "p"):
            located = dv.absolute_path(self.source_root)
            assert located is not None
            new_uuid = self._dv_files.get(located)
            if new_uuid is None:
                new_uuid = self._dv_files[located] = uuid.uuid4()
                self._copy(located, os.path.join(self.clone_root, dv_file_name(new_uuid)))
            dv = DeletionVectorDescriptor.on_disk(
                new_uuid, dv.offset or 0, dv.size_in_bytes, dv.cardinality
            )
        return replace(
            add,
            path=quote(os.path.join(directory, name)),
            data_change=True,
            deletion_vector=dv,
            base_row_id=None,
            default_row_commit_version=None,
        )

    def _copy(self, source: str, target: str) -> None:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.written.append(target)
        shutil.copyfile(source, target)

    def delete(self) -> None:
        for path in self.written:
            with contextlib.suppress(OSError):
                os.unlink(path)


def absolute_uri(root: str, path: str) -> str:
    """``path`` (relative and URI-encoded, or already a URI) as an absolute ``file:`` URI."""
    if urlparse(path).scheme:
        return path
    return Path(os.path.normpath(os.path.join(root, unquote(path)))).as_uri()


# --- the clone registry next to the source -------------------------------------------------


@dataclass(frozen=True)
class CloneEntry:
    """One ``_txsql_clones/<uuid>.json``: a clone's root and the source version it copied."""

    clone_root: str
    source_version: int
    created_ms: int


def register_clone(source_root: str, clone_root: str, source_version: int) -> str:
    """Write a new registry entry (put-if-absent; unique name) and return its path."""
    path = os.path.join(source_root, CLONES_DIR, f"{uuid.uuid4()}.json")
    body = {
        "cloneRoot": clone_root,
        "sourceVersion": source_version,
        "createdTime": int(time.time() * 1000),
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    LocalFileIO().write_if_absent(path, json.dumps(body).encode())
    return path


def registered_clones(source_root: str) -> list[CloneEntry]:
    """The clones recorded next to ``source_root`` (unreadable entries are skipped)."""
    directory = os.path.join(source_root, CLONES_DIR)
    entries: list[CloneEntry] = []
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as handle:
                    body = json.loads(handle.read())
                entries.append(
                    CloneEntry(
                        str(body["cloneRoot"]),
                        int(body["sourceVersion"]),
                        int(body["createdTime"]),
                    )
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a half-written entry of a crashed clone: its clone never committed
    return entries


# --- helpers ------------------------------------------------------------------------------


def _check_not_nested(source_root: str, location: str) -> None:
    a, b = source_root.rstrip("/") + "/", location.rstrip("/") + "/"
    if a.startswith(b) or b.startswith(a):
        raise SchemaError(
            f"a clone cannot live at {location}: it is inside (or contains) the source "
            f"table {source_root}, whose VACUUM would see the clone's files as its own",
            hint="Give the clone its own directory (another name or LOCATION).",
        )


def _metadata(statement: CloneTable, source: Snapshot, current: Snapshot | None) -> Metadata:
    configuration = dict(source.metadata.configuration)
    for key, value in statement.properties:
        canonical = properties.canonical_key(key)
        if canonical in PROTOCOL_KEYS:
            raise SchemaError(
                f"{key} cannot be set on a clone",
                hint="Clone first, then ALTER TABLE ... SET TBLPROPERTIES on the clone.",
            )
        configuration[canonical] = properties.validate_property(key, value)
    return replace(
        source.metadata,
        id=current.metadata.id if current is not None else str(uuid.uuid4()),
        configuration=configuration,
        created_time=int(time.time() * 1000),
    )


def _parameters(statement: CloneTable, source: Snapshot) -> dict[str, object]:
    return {
        "source": statement.source.display,
        "sourceVersion": json.dumps(source.version),
        "isShallow": json.dumps(statement.shallow),
    }


def _metrics(source: Snapshot, copies: DeepCopy) -> CloneMetrics:
    return CloneMetrics(
        source_table_size=sum(f.size for f in source.files),
        source_num_of_files=len(source.files),
        num_removed_files=0,
        num_copied_files=copies.data_files,
        removed_files_size=0,
        copied_files_size=copies.bytes,
    )


def _result(text: str, table: str, committed: CommitResult | None, source: Snapshot) -> Result:
    assert committed is not None  # never inside an explicit transaction
    info = committed.commit_info
    return Result(
        text,
        "CLONE",
        version=committed.version,
        table=table,
        operation_metrics=dict(info.operation_metrics or {}),
        message=f"clone of version {source.version} ({len(source.files)} file(s))",
    )


__all__ = ["CLONES_DIR", "CloneEntry", "clone_add", "registered_clones", "run_clone"]
