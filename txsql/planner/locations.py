"""Where tables live on disk: location checks for CREATE, and SQL-literal helpers.

Split from :mod:`txsql.planner.catalog` (which re-exports these names) to keep the catalog
module about names and registrations.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from txsql.errors import NonEmptyLocationError, SqlError, VersionNotFoundError
from txsql.storage.factory import file_io_for
from txsql.storage.leftovers import STAGING_DIR
from txsql.storage.paths import join, parse_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def timestamp_ms(expression: str, spark: SparkSession | None) -> int:
    """Milliseconds since the epoch of a TIMESTAMP AS OF value (a Spark SQL expression).

    Spark evaluates it, so any Spark timestamp expression works (``current_timestamp() -
    INTERVAL 1 HOUR``); literals without a zone are read in the session time zone (UTC).
    """
    if spark is None:
        raise VersionNotFoundError("TIMESTAMP AS OF needs a Spark session to evaluate")
    try:
        row = spark.sql(f"SELECT unix_micros(CAST({expression} AS TIMESTAMP)) AS us").first()
    except Exception as e:
        raise SqlError(
            f"cannot read {expression} as a timestamp: {str(e).splitlines()[0]}",
            hint="Use a literal like '2026-01-31 12:00:00' or a timestamp expression.",
        ) from None
    if row is None or row["us"] is None:
        raise SqlError(f"{expression} is not a valid timestamp", hint="e.g. '2026-01-31 12:00:00'")
    return int(row["us"]) // 1000


def sql_string(text: str) -> str:
    r"""Quote ``text`` as a Spark SQL string literal.

    >>> print(sql_string("it's"))
    'it\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def check_location_empty(location: str) -> None:
    """Refuse to CREATE a table in a directory that holds anything but a Delta log.

    Delta refuses such a location too: the files would look like orphans of the new table
    (VACUUM deletes orphans). An existing ``_delta_log`` directory is accepted (a racing
    or crashed CREATE made it; the version-0 commit decides who created the table), and so
    is txsql's own ``_txsql_staging`` area.

    Raises:
        NonEmptyLocationError: naming the location and a few of the entries in it.
    """
    if not parse_location(location).is_local:
        _check_object_store_location_empty(location)
        return
    try:
        entries = sorted(os.listdir(location))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise NonEmptyLocationError(
            f"cannot create a table at {location}: it is a file, not a directory"
        ) from None
    if "_delta_log" in entries and os.path.isdir(os.path.join(location, "_delta_log")):
        return
    others = [e for e in entries if e != STAGING_DIR]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise NonEmptyLocationError(
            f"cannot create a table at {location}: the directory is not empty and holds no "
            f"Delta log (it contains {shown})"
        )


def _check_object_store_location_empty(location: str) -> None:
    """:func:`check_location_empty` for an object-store prefix (objects, no directories)."""
    root = parse_location(location).root
    fs = file_io_for(root)
    if fs.list_dir(join(root, "_delta_log")):
        return
    others = sorted(
        {f.name.split("/", 1)[0] for f in fs.list_tree(root)} - {STAGING_DIR, "_delta_log"}
    )
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise NonEmptyLocationError(
            f"cannot create a table at {root}: objects already exist under it and it holds "
            f"no Delta log (it contains {shown})"
        )


def claim_location(location: str) -> bool:
    """Mark ``location`` as a table being created (an empty ``_delta_log`` directory).

    Made before a CTAS writes its data files, so a CREATE racing ours to the same place
    sees a Delta log being created rather than a non-empty directory of strangers' files.
    Returns whether the table directory itself existed before.
    """
    if not parse_location(location).is_local:
        return True  # object stores have no directories to claim (or to clean up)
    existed = os.path.isdir(location)
    os.makedirs(os.path.join(location, "_delta_log"), exist_ok=True)
    return existed


def release_location(location: str, remove_root: bool) -> None:
    """Undo :func:`claim_location` after a failed CREATE: remove what is left empty.

    ``rmdir`` only removes empty directories, so a table another CREATE committed there
    (or anything else in the directory) is never touched; the table directory itself
    only if the CREATE made it.
    """
    if not parse_location(location).is_local:
        return
    directories = [os.path.join(location, "_delta_log")] + ([location] if remove_root else [])
    for directory in directories:
        try:
            os.rmdir(directory)
        except OSError:
            return
