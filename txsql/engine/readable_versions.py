"""Which versions of a table can still be read, after a read missed one of its data files.

VACUUM deletes the files that left the table more than the retention period ago, so a
time-travel read of an old version fails in Spark with a missing file. That failure is
turned into :class:`~txsql.errors.VacuumedVersionError` naming the versions the user can
still read: from the latest version down, every version whose data and deletion-vector
files all exist, stopping at the first that lacks one.

This runs only on that error path: one listing of the table's directory, then one
snapshot per version checked (at most :data:`MAX_VERSIONS_CHECKED`). Nothing here reads
or writes data, and nothing imports Spark.
"""

from __future__ import annotations

from txsql.errors import DataFileError, TxSqlError, VacuumedVersionError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.storage.factory import file_io_for
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import LOG_DIR, join, parse_location, resolve_in_root

MAX_VERSIONS_CHECKED = 1000
"""Versions rebuilt at most while looking for the oldest readable one (error path only)."""

# Partition directories nest the data files this deep at most before the table root.
_MAX_LEVELS_UP = 32


def vacuumed_version_error(
    error: DataFileError, read_version: int | None = None
) -> VacuumedVersionError | None:
    """``error`` as a read of a vacuumed version, when that is what it is.

    It is when the file is gone and the table's latest version no longer names it (the
    file left the table and was deleted since). A file the latest version still needs is
    damage, not VACUUM: the caller keeps ``error`` (None is returned), as it does when the
    table cannot be found or read.

    Args:
        error: the missing-file error (its ``path`` as Spark named the file).
        read_version: the version the statement read, when known (named in the message).
    """
    if error.path is None:
        return None
    try:
        return _diagnose(error.path, read_version)
    except Exception:  # an object store's client errors too
        return None  # the diagnosis is a courtesy: never hide the original error behind it


def table_root_of(path: str, fs: FileIO) -> str | None:
    """The root of the Delta table holding the data file ``path``: the nearest directory
    above it with a ``_delta_log`` holding files, or None.

    >>> from txsql.storage.filesystem import MemoryFileIO
    >>> fs = MemoryFileIO()
    >>> fs.write("/w/t/_delta_log/00000000000000000000.json", b"{}")
    >>> table_root_of("/w/t/p=1/q=2/part-0.parquet", fs)
    '/w/t'
    """
    directory = path.rstrip("/")
    for _ in range(_MAX_LEVELS_UP):
        parent = directory.rsplit("/", 1)[0] if "/" in directory else ""
        if not parent or parent == directory or parent.endswith(":/"):
            return None
        directory = parent
        if fs.list_dir(join(directory, LOG_DIR)):
            return directory
    return None


def oldest_readable_version(log: DeltaLog, latest: Snapshot, existing: set[str]) -> int | None:
    """The oldest version from which every version up to ``latest`` has all its files.

    None when ``latest`` itself lacks a file. Versions the log can no longer rebuild (its
    old commits were cleaned up) end the walk too.
    """
    oldest = None
    stop = max(0, latest.version - MAX_VERSIONS_CHECKED + 1)
    for version in range(latest.version, stop - 1, -1):
        try:
            snapshot = latest if version == latest.version else log.snapshot(version)
        except TxSqlError:
            break  # the log keeps no older state: nothing older is readable either
        if not all_files_exist(snapshot, existing):
            break
        oldest = version
    return oldest


def all_files_exist(snapshot: Snapshot, existing: set[str]) -> bool:
    """Whether every data file and deletion-vector file ``snapshot`` names is in ``existing``."""
    root = snapshot.table_root
    for add in snapshot.files:
        if resolve_in_root(root, add.path) not in existing:
            return False
        if add.deletion_vector is not None:
            dv = add.deletion_vector.absolute_path(root)
            if dv is not None and parse_location(dv).root not in existing:
                return False
    return True


def _diagnose(path: str, read_version: int | None) -> VacuumedVersionError | None:
    missing = parse_location(path).root
    fs = file_io_for(missing)
    if fs.exists(missing):
        return None  # there but unreadable: damage, reported as such
    root = table_root_of(missing, fs)
    if root is None:
        return None
    log = DeltaLog.for_path(root)
    latest = log.snapshot()
    if any(resolve_in_root(root, f.path) == missing for f in latest.files):
        return None  # the current table needs it: a damaged table, not an old version
    # Listed names are literal file names (no URI decoding), unlike log paths.
    existing = {parse_location(join(root, s.name)).root for s in fs.list_tree(root)}
    oldest = oldest_readable_version(log, latest, existing)
    which = f"version {read_version}" if read_version is not None else "an old version"
    relative = missing.removeprefix(root.rstrip("/") + "/")
    if oldest is None:
        readable = "no version has all its files any more"
    elif oldest == latest.version:
        readable = f"only the latest version ({latest.version}) still has all its files"
    else:
        capped = oldest > 0 and oldest == latest.version - MAX_VERSIONS_CHECKED + 1
        since = f"{oldest} (older ones were not checked)" if capped else str(oldest)
        readable = f"versions {since} to {latest.version} still have all their files"
    return VacuumedVersionError(
        f"{which} of the table at {root} cannot be read: its data file {relative} was "
        f"deleted (by VACUUM: the latest version no longer uses it); {readable}",
        path=missing,
        oldest_readable=oldest,
        latest=latest.version,
    )
