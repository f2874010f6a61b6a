"""Table locations (local paths and object-store URIs) and the names of ``_delta_log`` files.

A location is either a local path (plain or ``file:`` URI) or an object-store URI. The
canonical form is what every :class:`~txsql.storage.filesystem.FileIO` path starts with:
an absolute local path, or ``<scheme>://<authority>/<key>`` with ``s3a``/``s3n`` folded
into ``s3`` and ``gcs`` into ``gs`` (Spark's own scheme is chosen later, at the engine).
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from txsql.errors import UnsupportedStorageError

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"  # V2 checkpoint sidecar files, under _delta_log
# Row orders of txsql's sorting compactions (txsql.txn.rowlevel.sort_map), under the table
# root: hidden from Delta readers and from VACUUM (``_``-prefixed).
ROW_ORDER_DIR = "_txsql_row_orders"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")

# Object-store schemes obstore serves, mapped to the canonical scheme txsql keeps.
OBJECT_STORE_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gs",
    "gcs": "gs",
    "az": "az",
    "azure": "az",
    "adl": "adl",
    "abfs": "abfs",
    "abfss": "abfss",
}
# Which family of options (credentials, endpoint) a canonical scheme takes.
SCHEME_FAMILY = {
    "s3": "s3",
    "gs": "gcs",
    "az": "azure",
    "adl": "azure",
    "abfs": "azure",
    "abfss": "azure",
}


@dataclass(frozen=True, slots=True)
class TableLocation:
    """A table root: a local directory or a prefix in an object-store bucket.

    ``root`` is the canonical string FileIO paths are built from; ``scheme`` is ``"file"``
    for the local file system, else the canonical object-store scheme.
    """

    root: str
    scheme: str = "file"

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def path(self) -> str:
        """The local directory; object-store locations have none (code that needs a
        POSIX path must go through a FileIO instead)."""
        if not self.is_local:
            raise UnsupportedStorageError(
                f"{self.root} is on an object store, and this operation needs a local path",
                hint="This operation is not supported on object stores yet; use a table on "
                "a local or mounted file system.",
            )
        return self.root

    @property
    def uri(self) -> str:
        return "file://" + self.root if self.is_local else self.root

    @property
    def bucket_root(self) -> str:
        """``<scheme>://<authority>`` of an object-store location (one store per bucket)."""
        scheme, rest = self.root.split("://", 1)
        return f"{scheme}://{rest.split('/', 1)[0]}"

    @property
    def log_path(self) -> str:
        return join(self.root, LOG_DIR)


def join(root: str, *parts: str) -> str:
    """Join path segments with ``/`` (object-store keys never use ``os.sep``).

    >>> join("s3://b/t/", "_delta_log", "x.json")
    's3://b/t/_delta_log/x.json'
    """
    out = root.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}" if part else out
    return out


def resolve_in_root(root: str, path: str) -> str:
    """The canonical location of a log ``path`` (relative URI-encoded, or an absolute URI)
    inside the table at canonical ``root``.

    >>> resolve_in_root("s3://lake/t", "p%3D1/a%20b.parquet")
    's3://lake/t/p=1/a b.parquet'
    >>> resolve_in_root("/data/t", "x/../y.parquet")
    '/data/t/y.parquet'
    >>> resolve_in_root("s3://lake/t", "s3a://lake/other/f.parquet")
    's3://lake/other/f.parquet'
    """
    if "://" in path or path.startswith("file:"):
        return parse_location(path).root
    relative = unquote(path)
    if relative.startswith("/"):
        return parse_location(relative).root
    if parse_location(root).is_local:
        return os.path.normpath(os.path.join(root, relative))
    return join(root, posixpath.normpath(relative))


def is_local_location(location: str) -> bool:
    """Whether ``location`` names the local file system (a path or ``file:`` URI)."""
    return parse_location(location).is_local


def parse_location(location: str) -> TableLocation:
    """Turn a path or URI into a :class:`TableLocation`.

    >>> parse_location("file:///tmp/t").path
    '/tmp/t'
    >>> parse_location("s3a://lake/sales/").root
    's3://lake/sales'

    Raises:
        UnsupportedStorageError: an unknown scheme (``hdfs://``, ``http://``...) or an
            object-store URI without a bucket.
    """
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        if scheme == "file" and parsed.netloc not in ("", "localhost"):
            raise UnsupportedStorageError(
                f"file URI {location} names host {parsed.netloc!r}",
                hint="Write a local file URI as file:///absolute/path (three slashes).",
            )
        raw = unquote(parsed.path) if scheme == "file" else location
        return TableLocation(os.path.abspath(os.path.expanduser(raw)).rstrip("/") or "/")
    canonical = OBJECT_STORE_SCHEMES.get(scheme)
    if canonical is None:
        raise UnsupportedStorageError(
            f"storage scheme '{scheme}://' is not supported ({location})",
            hint="Use a local path, file://, s3:// (or s3a://), gs://, abfss:// or az:// "
            "(HDFS is not supported: mount it, or copy the table to an object store).",
        )
    if not parsed.netloc:
        raise UnsupportedStorageError(
            f"object-store location {location} names no bucket or container",
            hint=f"Write it as {scheme}://<bucket>/<path>.",
        )
    key = "/".join(p for p in parsed.path.split("/") if p)
    root = f"{canonical}://{parsed.netloc}" + (f"/{key}" if key else "")
    return TableLocation(root, canonical)


def commit_name(version: int) -> str:
    """Return the file name of commit ``version``.

    >>> commit_name(12)
    '00000000000000000012.json'
    """
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    """Return the file name of the classic single-file checkpoint at ``version``."""
    return f"{version:020d}.checkpoint.parquet"


@dataclass(frozen=True, slots=True)
class LogFileName:
    """What a ``_delta_log`` file name says about itself."""

    kind: str  # "commit" | "checkpoint" | "multipart" | "v2"
    version: int
    part: int = 1
    parts: int = 1


def classify_log_file(name: str) -> LogFileName | None:
    """Classify a ``_delta_log`` entry; ``None`` for files the reader ignores.

    >>> classify_log_file("00000000000000000001.checkpoint.0000000002.0000000002.parquet")
    LogFileName(kind='multipart', version=1, part=2, parts=2)
    """
    if m := _COMMIT.match(name):
        return LogFileName("commit", int(m.group(1)))
    if m := _CLASSIC_CHECKPOINT.match(name):
        return LogFileName("checkpoint", int(m.group(1)))
    if m := _MULTIPART_CHECKPOINT.match(name):
        return LogFileName("multipart", int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _V2_CHECKPOINT.match(name):
        return LogFileName("v2", int(m.group(1)))
    return None


def data_file_path(root: str, path: str) -> str:
    """Canonical location (local path or object-store URI) of an add/remove ``path``
    (relative and URI-encoded, or an absolute URI)."""
    return resolve_in_root(root, path)
