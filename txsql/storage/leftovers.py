"""Removing what killed writers leave behind: temp files and Spark staging folders.

A writer killed between writing its temp file and linking it leaves a hidden
``.<name>.<uuid32>.tmp`` next to the final name (in ``_delta_log`` for commits and
checkpoints, in the table root for DV files). A statement killed
while Spark was writing leaves ``_txsql_staging/<uuid>/``. Neither is ever read (listings
skip dot files, the log never names staging files), so they only cost space. A live
writer's temp file exists for milliseconds, so temp files go once they are an hour old.
A staging folder goes once its newest file is older than the staging window
(:data:`STAGING_WINDOW_MS`): a running Spark job keeps touching its folder, so the age
test never removes work in progress. Called from VACUUM and after every local commit
(the table root's DV temp files only with a checkpoint: that needs a listing of the root).

The staging window is also VACUUM's floor for files no commit names: a file a statement
wrote and has not committed yet must survive any ``VACUUM ... RETAIN 0 HOURS``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass

from txsql.storage.paths import LOG_DIR

logger = logging.getLogger(__name__)

STAGING_DIR = "_txsql_staging"  # engine/write.py stages Spark's output here
TEMP_FILE_MAX_AGE_MS = 3_600_000
# The longest a file may sit in the table unnamed by the log and still be a live write's:
# a statement's files wait for the rest of the statement (a DV job, change data, a
# conflict check, retries) and, inside BEGIN ... COMMIT, for the COMMIT. A day covers any
# statement; a longer wait fails its commit typed (AddedFileMissingError), never loses a
# row. RETAIN cannot lower it; only TXSQL_STAGING_WINDOW_MS can, and only tests use it.
STAGING_WINDOW_MS = 24 * 3_600_000
STAGING_WINDOW_ENV = "TXSQL_STAGING_WINDOW_MS"
_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


@dataclass(frozen=True, slots=True)
class Leftovers:
    """Absolute paths removed by :func:`remove_stale_leftovers`."""

    temp_files: tuple[str, ...] = ()
    staging_dirs: tuple[str, ...] = ()


def staging_window_ms() -> int:
    """:data:`STAGING_WINDOW_MS`, or the override in ``TXSQL_STAGING_WINDOW_MS`` (tests)."""
    raw = os.environ.get(STAGING_WINDOW_ENV)
    if raw is None:
        return STAGING_WINDOW_MS
    try:
        return max(0, int(raw))
    except ValueError:
        logger.warning("ignoring %s=%r: not a whole number of ms", STAGING_WINDOW_ENV, raw)
        return STAGING_WINDOW_MS


def remove_stale_leftovers(
    table_root: str,
    *,
    max_age_ms: int | None = None,
    now_ms: int | None = None,
    scan_root: bool = True,
) -> Leftovers:
    """Delete txsql temp files and staging folders under ``table_root`` that are stale.

    ``max_age_ms`` None: temp files older than an hour, staging folders older than the
    staging window; a number is the age limit for both. ``scan_root`` False skips the
    table root's DV temp files (listing the root costs one entry per data file). Never
    raises for file-system errors (they are logged): cleanup must not fail the statement
    that triggered it.
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    temp_cutoff = now_ms - (TEMP_FILE_MAX_AGE_MS if max_age_ms is None else max_age_ms)
    staging_cutoff = now_ms - (staging_window_ms() if max_age_ms is None else max_age_ms)
    temps = []
    for directory in _temp_dirs(table_root)[: None if scan_root else 1]:
        temps += [p for p in _stale_temps(directory, temp_cutoff) if _remove_file(p)]
    staged = []
    staging = os.path.join(table_root, STAGING_DIR)
    for entry in _scan(staging):
        if entry.is_dir(follow_symlinks=False) and stale_staging(entry.path, staging_cutoff):
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.exists(entry.path):
                staged.append(entry.path)
    if staged:
        with contextlib.suppress(OSError):
            os.rmdir(staging)  # fails harmlessly while another writer is staging
    return Leftovers(tuple(sorted(temps)), tuple(sorted(staged)))


def stale_staging(folder: str, cutoff_ms: int) -> bool:
    """Whether a staging folder was left by a dead writer: nothing in it is younger than
    ``cutoff_ms`` (VACUUM asks the same question before deleting files inside one)."""
    return _newest_mtime_ms(folder) < cutoff_ms


def _temp_dirs(table_root: str) -> list[str]:
    # Temp files are only created next to their target: commits and checkpoints in the log,
    # DV files in the root (txsql writes no DV prefix folders). Partition folders are not
    # scanned: data files arrive by link, never through a temp file, and a wide table has
    # thousands of them. The log comes first (remove_stale_leftovers may stop after it).
    return [os.path.join(table_root, LOG_DIR), table_root]


def _stale_temps(directory: str, cutoff_ms: int) -> list[str]:
    out = []
    for entry in _scan(directory):
        if not _TEMP.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and _mtime_ms(entry.path) < cutoff_ms:
                out.append(entry.path)
        except OSError:
            continue
    return out


def _newest_mtime_ms(directory: str) -> int:
    """The newest modification time in a folder tree: a live Spark job keeps it young."""
    try:
        newest = _mtime_ms(directory)
    except OSError:
        return 2**63  # vanished or unreadable: treat as young, leave it alone
    for parent, dirs, files in os.walk(directory):
        for name in dirs + files:
            try:
                newest = max(newest, _mtime_ms(os.path.join(parent, name)))
            except OSError:
                continue
    return newest


def _mtime_ms(path: str) -> int:
    return int(os.lstat(path).st_mtime * 1000)


def _scan(directory: str) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(directory))
    except OSError:
        return []


def _remove_file(path: str) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    except OSError:
        logger.warning("could not remove leftover %s", path, exc_info=True)
        return False
    return True
