"""Removing what killed writers leave behind: temp files and Spark staging folders.

A writer killed between writing its temp file and linking it leaves a hidden
``.<name>.<uuid32>.tmp`` next to the final name (in ``_delta_log`` for commits and
checkpoints, in the table root for DV files). A statement killed
while Spark was writing leaves ``_txsql_staging/<uuid>/``. Neither is ever read (listings
skip dot files, the log never names staging files), so they only cost space; they are
removed once they are older than a threshold (1 hour by default). A live writer's temp
file exists for milliseconds and a running Spark job keeps touching its staging folder,
so the age test never removes work in progress. Called from VACUUM and, throttled, after
a commit that wrote a checkpoint.
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
DEFAULT_MAX_AGE_MS = 3_600_000
_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


@dataclass(frozen=True, slots=True)
class Leftovers:
    """Absolute paths removed by :func:`remove_stale_leftovers`."""

    temp_files: tuple[str, ...] = ()
    staging_dirs: tuple[str, ...] = ()


def remove_stale_leftovers(
    table_root: str, *, max_age_ms: int = DEFAULT_MAX_AGE_MS, now_ms: int | None = None
) -> Leftovers:
    """Delete txsql temp files and staging folders under ``table_root`` older than
    ``max_age_ms``. Never raises for file-system errors (they are logged): cleanup must
    not fail the statement that triggered it.
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - max_age_ms
    temps = []
    for directory in _temp_dirs(table_root):
        temps += [p for p in _stale_temps(directory, cutoff) if _remove_file(p)]
    staged = []
    staging = os.path.join(table_root, STAGING_DIR)
    for entry in _scan(staging):
        if entry.is_dir(follow_symlinks=False) and _newest_mtime_ms(entry.path) < cutoff:
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.exists(entry.path):
                staged.append(entry.path)
    if staged:
        with contextlib.suppress(OSError):
            os.rmdir(staging)  # fails harmlessly while another writer is staging
    return Leftovers(tuple(sorted(temps)), tuple(sorted(staged)))


def _temp_dirs(table_root: str) -> list[str]:
    # Temp files are only created next to their target: commits and checkpoints in the log,
    # DV files in the root (txsql writes no DV prefix folders). Partition folders are not
    # scanned: data files arrive by link, never through a temp file, and a wide table has
    # thousands of them.
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
