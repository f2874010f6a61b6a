"""A transaction's own files: checked before its commit, deleted when never committed.

Before the put-if-absent, :func:`require_added_files` makes sure every file the commit
adds (data files, their deletion-vector files, change-data files) still exists: a file
deleted after it was written (a VACUUM with its staging window overridden, a process
outside txsql) fails the commit with :class:`~txsql.errors.AddedFileMissingError`
instead of being named by it, which would lose its rows. Cost: one ``stat`` per distinct
file on a local disk (a few microseconds each), one HEAD per object on a store, 16 in
flight; repeated on each attempt after a lost race, since a rebase may add new files.

When a transaction ends without its files in the log (ROLLBACK, a statement refused
inside BEGIN, a conflict, retries exhausted, a rebase that replaced a DV file),
:func:`delete_uncommitted` removes them. A path is deleted only when all of these hold:

1. one of this transaction's writers recorded creating it (:mod:`txsql.storage.written`;
   writers refuse to overwrite, so a recorded file never held anyone else's bytes);
2. it lies under the table's root;
3. the commit that just landed (if any) does not name it, and neither does any commit
   after the transaction's read version. Our files did not exist before that version,
   so no earlier commit can name them; later ones are read to make sure. If the log
   cannot be read completely, nothing is deleted.

Whatever is not deleted is an orphan VACUUM removes once it is older than the staging
window; a commit whose outcome is unknown (an error during its put) deletes nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from txsql.errors import AddedFileMissingError, TxSqlError
from txsql.log.actions import Action, AddCDCFile, AddFile, RemoveFile
from txsql.log.deltalog import DeltaLog
from txsql.storage.paths import data_file_path, join, resolve_in_root
from txsql.storage.written import Written, missing_files

logger = logging.getLogger(__name__)

_SHOWN = 3  # missing paths named in the error message


def added_file_paths(root: str, actions: Iterable[Action]) -> list[str]:
    """Locations of the files ``actions`` add: data, DV and change-data files."""
    return sorted(_paths(root, actions, include_removes=False))


def require_added_files(log: DeltaLog, actions: Iterable[Action], operation: str) -> None:
    """Refuse a commit naming a file that no longer exists.

    Raises:
        AddedFileMissingError: at least one added file is gone; nothing was committed.
    """
    missing = missing_files(log.store.fs, added_file_paths(log.table_root, actions))
    if not missing:
        return
    shown = ", ".join(missing[:_SHOWN])
    if len(missing) > _SHOWN:
        shown += f" and {len(missing) - _SHOWN} more"
    raise AddedFileMissingError(
        f"{operation} was not committed: {len(missing)} file(s) it adds no longer exist "
        f"({shown}); something deleted them after they were written"
    )


def delete_uncommitted(
    log: DeltaLog,
    written: Written,
    since_version: int | None,
    committed: Iterable[Action] = (),
) -> list[str]:
    """Delete the files in ``written`` that no commit names (rules in the module doc).

    Args:
        log: The transaction's table.
        written: What the transaction's writers recorded.
        since_version: The transaction's read version (None: the table did not exist).
        committed: The actions of the transaction's own commit, if it landed.

    Returns:
        The deleted paths. Never raises: a file left behind is only an orphan.
    """
    if not written:
        return []
    root = log.table_root
    fs = log.store.fs
    try:
        mine = [p for p in written.files if _inside(root, p)]
        for directory in written.directories:
            if _inside(root, directory):
                mine += [join(directory, s.name) for s in fs.list_tree(directory)]
        candidates = {_normalized(root, p) for p in mine}
        if not candidates:
            return []
        named = _paths(root, committed, include_removes=True) | _named_since(log, since_version)
    except Exception:  # an unreadable log proves nothing: keep every file
        logger.warning("could not check the log of %s; its orphans stay for VACUUM", root)
        return []
    deleted = []
    for path in sorted(candidates - named):
        try:
            fs.delete(path)
        except FileNotFoundError:
            continue
        except (OSError, TxSqlError):
            logger.warning("could not delete the uncommitted file %s", path, exc_info=True)
            continue
        deleted.append(path)
    return deleted


def _named_since(log: DeltaLog, since_version: int | None) -> set[str]:
    """Paths every commit after ``since_version`` names (raises if one cannot be read)."""
    latest = log.latest_version()
    first = 0 if since_version is None else since_version + 1
    if latest is None or latest < first:
        return set()
    named: set[str] = set()
    for actions in log.read_commits(range(first, latest + 1)):
        named |= _paths(log.table_root, actions, include_removes=True)
    return named


def _paths(root: str, actions: Iterable[Action], *, include_removes: bool) -> set[str]:
    paths: set[str] = set()
    for action in actions:
        if isinstance(action, AddCDCFile):
            paths.add(_normalized(root, data_file_path(root, action.path)))
            continue
        if not isinstance(action, AddFile) and not (
            include_removes and isinstance(action, RemoveFile)
        ):
            continue
        paths.add(_normalized(root, data_file_path(root, action.path)))
        dv = action.deletion_vector
        if dv is None:
            continue
        try:
            located = dv.absolute_path(root)
        except TxSqlError:  # a DV kind txsql cannot locate is not one of our files
            continue
        if located is not None:
            paths.add(_normalized(root, resolve_in_root(root, located)))
    return paths


def _normalized(root: str, path: str) -> str:
    return os.path.normpath(path) if _is_local(root) else path


def _inside(root: str, path: str) -> bool:
    if _is_local(root):
        return os.path.normpath(path).startswith(os.path.normpath(root) + os.sep)
    return path.startswith(root.rstrip("/") + "/")


def _is_local(root: str) -> bool:
    return "://" not in root  # log roots are canonical: a local path or a store URI
