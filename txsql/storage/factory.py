"""One entry point from a location to the FileIO that serves it.

Local paths and ``file:`` URIs get :class:`~txsql.storage.filesystem.LocalFileIO` (temp
file + fsync + link, unchanged); object-store URIs get the shared
:class:`~txsql.storage.objectstore.ObjectStoreFileIO` of their bucket.
"""

from __future__ import annotations

from collections.abc import Mapping

from txsql.storage.filesystem import FileIO, LocalFileIO
from txsql.storage.objectstore import object_store_file_io
from txsql.storage.paths import TableLocation, parse_location

_LOCAL = LocalFileIO()


def file_io_for(
    location: str | TableLocation,
    storage_options: Mapping[str, object] | None = None,
    hadoop_conf: Mapping[str, str] | None = None,
) -> FileIO:
    """The FileIO for ``location``.

    Args:
        location: A path or URI (or an already parsed location).
        storage_options: Explicit object-store settings (highest precedence).
        hadoop_conf: Spark's Hadoop settings (``spark.hadoop.fs.s3a.*``...), used below
            the environment; ignored for local paths.

    Raises:
        UnsupportedStorageError: an unsupported scheme.
        InvalidStorageOptionError: an option value of the wrong type.
    """
    parsed = parse_location(location) if isinstance(location, str) else location
    if parsed.is_local:
        return _LOCAL
    return object_store_file_io(parsed, storage_options, hadoop_conf)
