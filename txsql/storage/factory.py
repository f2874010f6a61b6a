"""One entry point from a location to the FileIO that serves it, and Spark's view of it.

Local paths and ``file:`` URIs get :class:`~txsql.storage.filesystem.LocalFileIO` (temp
file + fsync + link, unchanged); object-store URIs get the shared
:class:`~txsql.storage.objectstore.ObjectStoreFileIO` of their bucket.

A :class:`~txsql.session.Session` registers its ``storage_options``, the Hadoop settings
it read from Spark and its Spark scheme map once with :func:`configure_storage`; every
later ``file_io_for(location)`` without explicit options uses them. This is one setting
per Python process (the last Session configured wins): a notebook talks to one set of
stores with one set of credentials.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from txsql.errors import StorageError, UnsupportedStorageError
from txsql.storage.filesystem import FileIO, LocalFileIO
from txsql.storage.objectstore import object_store_file_io
from txsql.storage.paths import OBJECT_STORE_SCHEMES, TableLocation, parse_location

# How Spark's Hadoop file systems spell each canonical scheme (hadoop-aws is s3a://).
DEFAULT_SPARK_SCHEMES: Mapping[str, str] = {
    "s3": "s3a",
    "gs": "gs",
    "az": "abfss",
    "adl": "adl",
    "abfs": "abfs",
    "abfss": "abfss",
}


@dataclass(frozen=True)
class StorageContext:
    """Process-wide storage settings (see :func:`configure_storage`)."""

    storage_options: Mapping[str, object] = field(default_factory=dict)
    hadoop_conf: Mapping[str, str] = field(default_factory=dict)
    spark_schemes: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SPARK_SCHEMES))


_LOCAL = LocalFileIO()
_CONTEXT = StorageContext()
_CONTEXT_LOCK = threading.Lock()


def configure_storage(
    storage_options: Mapping[str, object] | None = None,
    hadoop_conf: Mapping[str, str] | None = None,
    spark_schemes: Mapping[str, str] | None = None,
) -> StorageContext:
    """Set the process-wide defaults; returns the new context.

    Args:
        storage_options: Explicit object-store settings (highest precedence).
        hadoop_conf: Spark's Hadoop settings (``spark.hadoop.fs.s3a.*``...), lowest.
        spark_schemes: Overrides of :data:`DEFAULT_SPARK_SCHEMES`, keyed by any spelling
            of the scheme (``{"s3": "s3"}`` for EMR's own S3 file system).

    Raises:
        UnsupportedStorageError: a scheme map entry names an unknown scheme.
    """
    global _CONTEXT
    schemes = dict(DEFAULT_SPARK_SCHEMES)
    for scheme, spark_scheme in (spark_schemes or {}).items():
        canonical = OBJECT_STORE_SCHEMES.get(scheme.lower().rstrip(":/"))
        if canonical is None:
            raise UnsupportedStorageError(
                f"spark_scheme maps unknown storage scheme {scheme!r}",
                hint="Key the map by s3, gs, az, abfss... e.g. spark_scheme={'s3': 's3a'}.",
            )
        schemes[canonical] = spark_scheme.lower().rstrip(":/")
    context = StorageContext(dict(storage_options or {}), dict(hadoop_conf or {}), schemes)
    with _CONTEXT_LOCK:
        _CONTEXT = context
    return context


def storage_context() -> StorageContext:
    with _CONTEXT_LOCK:
        return _CONTEXT


def file_io_for(
    location: str | TableLocation,
    storage_options: Mapping[str, object] | None = None,
    hadoop_conf: Mapping[str, str] | None = None,
) -> FileIO:
    """The FileIO for ``location``.

    Args:
        location: A path or URI (or an already parsed location).
        storage_options: Explicit object-store settings; None: the configured defaults.
        hadoop_conf: Spark's Hadoop settings; None: the configured defaults.

    Raises:
        UnsupportedStorageError: an unsupported scheme.
        InvalidStorageOptionError: an option value of the wrong type.
    """
    parsed = parse_location(location) if isinstance(location, str) else location
    if parsed.is_local:
        return _LOCAL
    context = storage_context()
    options = context.storage_options if storage_options is None else storage_options
    hadoop = context.hadoop_conf if hadoop_conf is None else hadoop_conf
    return object_store_file_io(parsed, options, hadoop)


def delete_quietly(path: str) -> bool:
    """Best-effort delete of the file at ``path`` (a failed statement's own files, which no
    commit names); True if it was deleted. Never raises: a leftover is only an orphan that
    VACUUM removes later."""
    try:
        file_io_for(path).delete(path)
    except (OSError, StorageError):
        return False
    return True


def spark_uri(path: str) -> str:
    """``path`` (a canonical location or a file below one) as Spark's file systems name it:
    ``s3://b/t/x`` -> ``s3a://b/t/x`` by default, local paths unchanged.

    >>> spark_uri("s3://lake/t/part-0.parquet")
    's3a://lake/t/part-0.parquet'
    >>> spark_uri("/tmp/t")
    '/tmp/t'
    """
    if "://" not in path:
        return path
    scheme, rest = path.split("://", 1)
    if scheme == "file":
        return path
    spark_scheme = storage_context().spark_schemes.get(scheme, scheme)
    return f"{spark_scheme}://{rest}"
