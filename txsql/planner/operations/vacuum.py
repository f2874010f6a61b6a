"""VACUUM t [RETAIN n HOURS] [DRY RUN]: delete files no retained version needs.

A file under the table root is deleted when (Delta's ``VacuumCommand``):

* no live file of the current version is it, or its deletion vector;
* no tombstone younger than the retention (``delete before = now - retention``) names it
  or its DV: versions inside the window stay readable by time travel;
* its modification time is older than ``delete before`` too;
* it provably belongs to the table: a readable commit names it, or it was written after
  the table's creation (version 0). Unnamed files older than the table are someone
  else's data (CREATE refuses non-empty directories, but files can be copied in later)
  and are never deleted;
* if no commit names it, it is also older than the staging window (24 hours, see
  :data:`~txsql.storage.leftovers.STAGING_WINDOW_MS`), which RETAIN cannot lower: such
  a file may be a running statement's, written and about to be committed. Delta Spark
  deletes those with ``RETAIN 0 HOURS`` and the safety check off, and the statement then
  commits a file that is gone; here it survives (and should it be deleted anyway, its
  commit fails typed rather than naming it, :mod:`txsql.txn.commit.own_files`).

That covers expired tombstones and orphans: files a killed writer left, unreferenced
``deletion_vector_*.bin``, and staging folders of txsql's ``_txsql_staging/`` whose
newest file is older than the staging window (a live writer keeps its folder young, so
nothing inside it is ever deleted). ``_delta_log`` and other hidden (``_``/``.``-prefixed)
entries are never touched. The retention defaults to
``delta.deletedFileRetentionDuration`` (7 days); a shorter RETAIN is refused unless the
Spark conf ``spark.databricks.delta.retentionDurationCheck.enabled`` is ``false``.

Prepared transactions (``PREPARE TRANSACTION`` on an enrolled table) are durable however
long they wait: the files an undecided one wrote into the table are kept.

Shallow clones: files a clone's log names (live or not) are kept while the clone exists;
clones register themselves in ``<source>/_txsql_clones/`` (see
:mod:`txsql.planner.operations.clone`), clones of clones included.

A real run commits ``VACUUM START`` (files to delete) before deleting and ``VACUUM END``
after, both without file actions, as Delta does; DRY RUN lists the files and commits
nothing. Just before deleting, commits that landed since the snapshot was read are read
too, and files they name are spared.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass

from txsql.errors import RetentionTooShortError, TransactionError, TxSqlError
from txsql.log import properties
from txsql.log.actions import AddFile, RemoveFile
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.metrics import VacuumEndMetrics, VacuumStartMetrics
from txsql.planner.operations.clone import PENDING_CLONE_MS, registered_clones
from txsql.planner.sql.command_statements import VacuumTable
from txsql.result import Result
from txsql.storage.factory import file_io_for
from txsql.storage.leftovers import (
    STAGING_DIR,
    remove_stale_leftovers,
    staging_window_ms,
    stale_staging,
)
from txsql.storage.paths import (
    data_file_path,
    is_local_location,
    join,
    parse_location,
    resolve_in_root,
)
from txsql.txn.multitable.coordinator import coordinator_for
from txsql.txn.prepared.records import undecided

CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
_HOUR_MS = 3_600_000


def run_vacuum(ctx: RunContext, statement: VacuumTable, text: str) -> Result:
    if ctx.explicit is not None:
        raise TransactionError(
            "VACUUM cannot run inside BEGIN ... COMMIT",
            hint="COMMIT or ROLLBACK first; VACUUM deletes files and cannot be rolled back.",
        )
    log = ctx.catalog.existing_log(statement.target)
    snapshot = log.snapshot()
    table_ms = properties.deleted_file_retention_ms(snapshot.configuration)
    retain_ms = (
        table_ms if statement.retain_hours is None else int(statement.retain_hours * _HOUR_MS)
    )
    check = str(ctx.spark.conf.get(CHECK_CONF, "true") or "true").strip().lower() != "false"
    if check and retain_ms < table_ms:
        raise RetentionTooShortError(
            f"VACUUM RETAIN {statement.retain_hours:g} HOURS is shorter than the table's "
            f"retention of {table_ms / _HOUR_MS:g} hours (delta.deletedFileRetentionDuration): "
            "files that concurrent readers or time travel still need could be deleted",
            hint=f"Use RETAIN {table_ms / _HOUR_MS:g} HOURS or more. If you are sure no "
            "reader or writer needs older versions, run "
            f"SET {CHECK_CONF} = false (spark.conf.set) first.",
        )
    location = parse_location(snapshot.table_root)
    root = location.root
    now = int(time.time() * 1000)
    cutoff = now - retain_ms
    keep = referenced_files(snapshot, root, cutoff) | clone_files(log, root)
    keep |= prepared_files(snapshot)
    floor = now - staging_window_ms()
    owned = Ownership(
        logged_files(log, snapshot, root), creation_time_ms(log, snapshot), min(cutoff, floor)
    )
    # Staging folders hold no version's files: the window alone decides, as after commits.
    dead = dead_staging_folders(root, floor) if location.is_local else []
    sizes = files_to_delete(root, keep, cutoff, owned, dead, floor)
    doomed = sorted(sizes)
    to_delete = VacuumStartMetrics(len(doomed), sum(sizes.values()))
    if statement.dry_run:
        df = ctx.spark.createDataFrame([(p,) for p in doomed], "path STRING")
        return Result(
            text,
            "VACUUM",
            version=snapshot.version,
            table=statement.target.display,
            metrics=to_delete.shown(),
            df=df,
            message=f"{len(doomed)} file(s) would be deleted (dry run)",
        )
    start = ctx.transaction(log)
    ctx.commit(
        start,
        "VACUUM START",
        {
            "retentionCheckEnabled": check,
            "defaultRetentionMillis": table_ms,
            "specifiedRetentionMillis": retain_ms,
        },
        to_delete.delta(),
    )
    deleted = deleted_bytes = 0
    fs = file_io_for(location)
    named_since = named_after(log, snapshot.version, root)  # committed while we listed
    for path in (p for p in doomed if p not in named_since):
        with contextlib.suppress(FileNotFoundError):
            fs.delete(path)
            deleted += 1
            deleted_bytes += sizes[path]
    directories = 0
    if location.is_local:  # object stores have no directories and no temp files
        for folder in dead:  # their files are gone; now their empty directories
            shutil.rmtree(folder, ignore_errors=True)
            directories += not os.path.exists(folder)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(root, STAGING_DIR))  # fails while a writer is staging
        remove_stale_leftovers(root)  # temp files of killed writers
        directories += _remove_empty_dirs(root)
    end = ctx.transaction(log)
    done = VacuumEndMetrics(deleted, directories, size_of_deleted_data=deleted_bytes)
    committed = ctx.commit(end, "VACUUM END", {"status": "COMPLETED"}, done.delta())
    df = ctx.spark.createDataFrame([(snapshot.table_root,)], "path STRING")
    return Result(
        text,
        "VACUUM",
        version=committed.version if committed else None,
        read_version=snapshot.version,
        table=statement.target.display,
        metrics=done.shown(),
        operation_metrics=dict(committed.commit_info.operation_metrics or {}) if committed else {},
        df=df,
        message=f"deleted {deleted} file(s)",
    )


@dataclass(frozen=True)
class Ownership:
    """What lets VACUUM delete a file nothing keeps: a commit names it, or its age.

    ``logged``: local paths some readable commit (or the snapshot) names. ``created_ms``:
    the table's creation time; an unnamed file written before it predates the table
    (someone else's data in the directory) and is never deleted. None: unknown, so only
    logged files are deleted. ``unnamed_cutoff_ms``: an unnamed file must be older than
    this, the staging window's floor (or the retention's cutoff, if that is older).
    """

    logged: set[str]
    created_ms: int | None
    unnamed_cutoff_ms: int

    def may_delete(self, path: str, mtime_ms: float, cutoff_ms: int) -> bool:
        """Whether a file no retained version keeps may go, given its modification time."""
        if path in self.logged:
            return mtime_ms < cutoff_ms
        if mtime_ms >= self.unnamed_cutoff_ms:
            return False  # maybe a running statement's file, not committed yet
        return self.created_ms is not None and mtime_ms >= self.created_ms


def dead_staging_folders(root: str, cutoff_ms: int) -> list[str]:
    """Staging folders (local tables) whose newest file is older than ``cutoff_ms``: their
    writer is dead. A live one keeps touching its folder, which VACUUM never enters."""
    staging = os.path.join(root, STAGING_DIR)
    try:
        folders = [e.path for e in os.scandir(staging) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(f for f in folders if stale_staging(f, cutoff_ms))


def files_to_delete(
    root: str,
    keep: set[str],
    cutoff_ms: int,
    owned: Ownership,
    dead_staging: list[str],
    staging_cutoff_ms: int,
) -> dict[str, int]:
    """Paths under ``root`` that VACUUM deletes (see the module docstring), with sizes.

    ``dead_staging``: the staging folders of dead writers (local tables); every file in
    them goes. Object stores find theirs in the same listing, dead when their newest file
    is older than ``staging_cutoff_ms``.
    """
    if not is_local_location(root):
        return _object_store_files_to_delete(root, keep, cutoff_ms, owned, staging_cutoff_ms)
    doomed: dict[str, int] = {}
    for folder in dead_staging:
        doomed.update(_sizes_below(folder))
    for directory, dirs, names in os.walk(root):
        # Hidden directories (the log, _change_data, .git, the staging area) are skipped.
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in names:
            if name.startswith((".", "_")):
                continue
            path = os.path.normpath(os.path.join(directory, name))
            if path in keep:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            if owned.may_delete(path, st.st_mtime * 1000, cutoff_ms):
                doomed[path] = st.st_size
    return doomed


def _object_store_files_to_delete(
    root: str, keep: set[str], cutoff_ms: int, owned: Ownership, staging_cutoff_ms: int
) -> dict[str, int]:
    """:func:`files_to_delete` from one recursive listing of the table's prefix (same
    rules: hidden path components are skipped, staging folders go whole or not at all)."""
    doomed: dict[str, int] = {}
    staged: dict[str, list[tuple[str, int, int]]] = {}
    for status in file_io_for(root).list_tree(root):
        parts = status.name.split("/")
        path = join(root, status.name)
        if parts[0] == STAGING_DIR and len(parts) > 2:
            staged.setdefault(parts[1], []).append((path, status.size, status.modification_time))
            continue
        if any(p.startswith((".", "_")) for p in parts) or path in keep:
            continue
        if owned.may_delete(path, status.modification_time, cutoff_ms):
            doomed[path] = status.size
    for files in staged.values():
        if max(mtime for _, _, mtime in files) < staging_cutoff_ms:
            doomed.update((path, size) for path, size, _ in files)
    return doomed


def _sizes_below(directory: str) -> dict[str, int]:
    sizes = {}
    for parent, _, names in os.walk(directory):
        for name in names:
            path = os.path.normpath(os.path.join(parent, name))
            with contextlib.suppress(OSError):
                sizes[path] = os.lstat(path).st_size
    return sizes


def _remove_empty_dirs(root: str) -> int:
    """Remove partition directories left empty; never the root, nor anything hidden (the
    log, the staging area: a live writer's empty folders there are about to fill)."""
    removed = 0
    for directory, _, _ in os.walk(root, topdown=False):
        if os.path.normpath(directory) == os.path.normpath(root):
            continue
        relative = os.path.relpath(directory, root)
        if any(part.startswith((".", "_")) for part in relative.split(os.sep)):
            continue
        try:
            os.rmdir(directory)
        except OSError:
            continue
        removed += 1
    return removed


# The file sets VACUUM compares (local paths, so they compare with a directory walk).


def referenced_files(snapshot: Snapshot, root: str, cutoff_ms: int) -> set[str]:
    """Local paths VACUUM must keep: live files, their DVs, and unexpired tombstones'."""
    entries: list[tuple[str, object]] = [(f.path, f.deletion_vector) for f in snapshot.files]
    entries += [
        (r.path, r.deletion_vector)
        for r in snapshot.tombstones
        if (r.deletion_timestamp or 0) > cutoff_ms
    ]
    return _local_paths(root, entries)


def prepared_files(snapshot: Snapshot) -> set[str]:
    """Local paths of the files undecided prepared transactions wrote into this table: a
    prepared transaction is durable, however long it waits for COMMIT PREPARED."""
    coordinator = coordinator_for(snapshot.table_root, snapshot.configuration)
    if coordinator is None:  # not enrolled: leaving is refused while one is prepared
        return set()
    table_id = snapshot.metadata.id
    return {
        parse_location(path).root  # recorded as written: a path or URI, not log-encoded
        for record in undecided(coordinator)
        for part in record.participants
        if part.table_id == table_id
        for path in part.written_files
    }


def logged_files(log: DeltaLog, snapshot: Snapshot, root: str) -> set[str]:
    """Local paths of every data and DV file a readable commit or the snapshot names.

    These provably belong to the table (some commit wrote them), whatever their
    modification time: a CTAS's files are older than its own version-0 commit.
    """
    entries: list[tuple[str, object]] = [(f.path, f.deletion_vector) for f in snapshot.files]
    entries += [(r.path, r.deletion_vector) for r in snapshot.tombstones]
    versions = [v for v in log.store.list_commits() if v <= snapshot.version]
    for actions in log.read_commits(versions):  # concurrent GETs on object stores
        for action in actions:
            if isinstance(action, (AddFile, RemoveFile)):
                entries.append((action.path, action.deletion_vector))
    return _local_paths(root, entries)


def clone_files(log: DeltaLog, root: str) -> set[str]:
    """Local paths that shallow clones of this table (and their clones) reference.

    A clone's VACUUM never reaches here for the source's files (they are outside its
    root); this keeps the source's VACUUM from deleting files a clone still reads.
    """
    keep: set[str] = set()
    if not is_local_location(root):
        return keep  # clones are local-only (CLONE refuses object stores)
    now = int(time.time() * 1000)
    seen: set[str] = set()
    pending = [(root, log)]
    while pending:
        source_root, source_log = pending.pop()
        for entry in registered_clones(source_root):
            clone_root = os.path.normpath(entry.clone_root)
            if clone_root in seen:
                continue
            seen.add(clone_root)
            clone_log = DeltaLog.for_path(clone_root)
            if clone_log.exists():
                clone = clone_log.snapshot()
                keep |= logged_files(clone_log, clone, clone_root)
                pending.append((clone_root, clone_log))
            elif entry.created_ms > now - PENDING_CLONE_MS:
                # Being created (the entry is written before the clone's commit).
                try:
                    copied = source_log.snapshot(entry.source_version)
                except TxSqlError:  # that version is gone: keep all the source ever named
                    copied = source_log.snapshot()
                    keep |= logged_files(source_log, copied, source_root)
                keep |= referenced_files(copied, source_root, now)
    return keep


def named_after(log: DeltaLog, version: int, root: str) -> set[str]:
    """Local paths the commits after ``version`` name (our own VACUUM START included)."""
    latest = log.latest_version()
    if latest is None or latest <= version:
        return set()
    entries: list[tuple[str, object]] = []
    for actions in log.read_commits(range(version + 1, latest + 1)):
        for action in actions:
            if isinstance(action, (AddFile, RemoveFile)):
                entries.append((action.path, action.deletion_vector))
    return _local_paths(root, entries)


def creation_time_ms(log: DeltaLog, snapshot: Snapshot) -> int | None:
    """When the table was created: version 0's file time, else the metadata's createdTime.

    None when neither is known: VACUUM then deletes only files the log names.
    """
    try:
        return log.store.commit_status(0).modification_time
    except FileNotFoundError:
        return snapshot.metadata.created_time


def _local_paths(root: str, entries: list[tuple[str, object]]) -> set[str]:
    paths: set[str] = set()
    for path, dv in entries:
        paths.add(data_file_path(root, path))
        absolute = getattr(dv, "absolute_path", None)
        if absolute is not None:
            located = absolute(root)
            if located is not None:
                paths.add(resolve_in_root(root, located))
    return paths
