"""FileIO over an object store (S3, GCS, Azure) through obstore.

Paths are canonical URIs (``s3://bucket/t/_delta_log/00000000000000000000.json``); one
:class:`ObjectStoreFileIO` serves one bucket and turns a URI into the object's key.

Put-if-absent is a conditional PUT (``If-None-Match: *``, obstore's ``mode="create"``):
the store itself decides which of two racing writers wins, never a list-then-write and
never a rename. A single PUT is atomic, so readers never observe a partial object.
Stores that accept the header but ignore it would silently let two commits overwrite one
another, so :meth:`ObjectStoreFileIO.verify_put_if_absent` probes a store before the first
byte of a new table's log is written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import obstore
from obstore.exceptions import AlreadyExistsError, PreconditionError
from obstore.store import ObjectStore, from_url

from txsql.errors import ConditionalWriteUnsupportedError, StorageError
from txsql.storage.filesystem import FileStatus
from txsql.storage.objectstore_errors import translate
from txsql.storage.options import StoreSettings, resolve_settings
from txsql.storage.paths import TableLocation, parse_location

# Fail fast on a dead endpoint instead of obstore's default of 10 retries over 3 minutes;
# storage_options max_retries / retry_timeout (seconds) override these.
_DEFAULT_RETRIES = 3
_DEFAULT_RETRY_SECONDS = 20.0
_DEFAULT_CONNECT_TIMEOUT = "5s"
PROBE_PREFIX = ".txsql-put-if-absent-probe-"


def _ms(value: Any) -> int:
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    return 0


class ObjectStoreFileIO:
    """One bucket (or container) of an object store, addressed with full URIs.

    Build it with :func:`object_store_file_io` (cached per bucket and settings) so the
    HTTP connection pool is shared. Instances pickle as their settings, so a Spark task
    closure can carry one to executors, which reconnect on their own.
    """

    def __init__(self, bucket_root: str, settings: StoreSettings) -> None:
        self.bucket_root = bucket_root.rstrip("/")
        self.settings = settings
        self._store: ObjectStore | None = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        return (object_store_file_io_from_settings, (self.bucket_root, self.settings))

    # --- plumbing ------------------------------------------------------------------------

    @property
    def store(self) -> ObjectStore:
        with self._lock:
            if self._store is None:
                self._store = self._connect()
            return self._store

    def _connect(self) -> ObjectStore:
        retry = self.settings.retry_dict()
        try:
            retries = int(retry.get("max_retries", _DEFAULT_RETRIES))
            seconds = float(retry.get("retry_timeout", _DEFAULT_RETRY_SECONDS))
        except ValueError as exc:
            raise translate(exc, self.bucket_root, "configure") from None
        client: dict[str, Any] = {"connect_timeout": _DEFAULT_CONNECT_TIMEOUT}
        client.update(self.settings.client_dict())
        try:
            # obstore types its config per store (TypedDicts); ours are validated at runtime.
            build: Any = from_url
            store: ObjectStore = build(
                self.bucket_root,
                config=self.settings.config_dict(),
                client_options=client,
                retry_config={
                    "max_retries": retries,
                    "retry_timeout": dt.timedelta(seconds=seconds),
                },
            )
            return store
        except Exception as exc:  # obstore raises ValueError and its own BaseError tree
            raise translate(exc, self.bucket_root, "configure") from None

    def key(self, path: str) -> str:
        """The object key of a canonical URI inside this bucket."""
        prefix = self.bucket_root + "/"
        if not path.startswith(prefix):
            canonical = parse_location(path).root
            if not canonical.startswith(prefix):
                raise StorageError(f"{path} is not in {self.bucket_root}")
            path = canonical
        return path[len(prefix) :]

    # --- FileIO --------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        try:
            return bytes(obstore.get(self.store, self.key(path)).bytes())
        except Exception as exc:
            raise translate(exc, path, "read") from None

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset``; short (like a local read) past the end."""
        key = self.key(path)
        try:
            return bytes(obstore.get_range(self.store, key, start=offset, length=length))
        except Exception as exc:
            if "416" not in str(exc) and "Range" not in str(exc):
                raise translate(exc, path, "read") from None
        # The range starts at or beyond the end: return what a POSIX read would.
        size = self.stat(path).size
        if offset >= size:
            return b""
        return self.read_range(path, offset, size - offset)

    def write(self, path: str, data: bytes) -> None:
        """Replace ``path`` with one PUT (atomic on every object store)."""
        try:
            obstore.put(self.store, self.key(path), data, mode="overwrite")
        except Exception as exc:
            raise translate(exc, path, "write") from None

    def write_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with a conditional PUT; ``FileExistsError`` if it exists."""
        try:
            obstore.put(self.store, self.key(path), data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            raise FileExistsError(path) from None
        except Exception as exc:
            raise translate(exc, path, "write") from None

    def exists(self, path: str) -> bool:
        try:
            obstore.head(self.store, self.key(path))
            return True
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise translate(exc, path, "read") from None

    def stat(self, path: str) -> FileStatus:
        try:
            meta = obstore.head(self.store, self.key(path))
        except Exception as exc:
            raise translate(exc, path, "read") from None
        return FileStatus(
            path.rstrip("/").rsplit("/", 1)[-1], meta["size"], _ms(meta["last_modified"])
        )

    def list_dir(self, path: str) -> list[FileStatus]:
        """Objects directly under ``path/`` (no "directories"); empty if there are none."""
        prefix = self.key(path.rstrip("/") + "/x")[:-1]
        try:
            listed = obstore.list_with_delimiter(self.store, prefix or None)
        except Exception as exc:
            raise translate(exc, path, "list") from None
        out = []
        for meta in listed["objects"]:
            name = meta["path"][len(prefix) :]
            if not name or "/" in name or name.startswith("."):
                continue  # hidden names: probes and side files, like LocalFileIO skips them
            out.append(FileStatus(name, meta["size"], _ms(meta["last_modified"])))
        return out

    def list_tree(self, path: str) -> list[FileStatus]:
        """Every object below ``path/`` at any depth, names relative to ``path``."""
        prefix = self.key(path.rstrip("/") + "/x")[:-1]
        out = []
        try:
            for batch in obstore.list(self.store, prefix or None, chunk_size=1000):
                for meta in batch:
                    name = meta["path"][len(prefix) :]
                    out.append(FileStatus(name, meta["size"], _ms(meta["last_modified"])))
        except Exception as exc:
            raise translate(exc, path, "list") from None
        return out

    def delete(self, path: str) -> None:
        """Delete ``path``. Object stores do not say whether it existed; neither do we."""
        try:
            obstore.delete(self.store, self.key(path))
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise translate(exc, path, "delete") from None

    # --- the conditional-write probe -----------------------------------------------------

    def verify_put_if_absent(self, directory: str) -> None:
        """Refuse a store that ignores ``If-None-Match: *`` before a table is created.

        Puts one probe object twice with ``mode="create"`` under ``directory``: the second
        must fail. The probe is deleted either way; its name starts with a dot, so listings
        skip it even if the delete is lost.

        Raises:
            ConditionalWriteUnsupportedError: the second conditional PUT succeeded, or the
                store refused conditional PUTs outright.
        """
        probe = f"{directory.rstrip('/')}/{PROBE_PREFIX}{uuid.uuid4().hex}"
        try:
            self.write_if_absent(probe, b"1")
            try:
                self.write_if_absent(probe, b"2")
            except FileExistsError:
                return
            raise ConditionalWriteUnsupportedError(
                f"the object store behind {directory} ignores conditional writes "
                "(If-None-Match: *): a second create of the same object succeeded, so two "
                "writers could overwrite each other's commits; the table was not created"
            )
        finally:
            # A dot-named leftover is invisible to listings; keep the real error.
            with contextlib.suppress(StorageError):
                self.delete(probe)


_CACHE: dict[tuple[str, StoreSettings], ObjectStoreFileIO] = {}
_CACHE_LOCK = threading.Lock()


def object_store_file_io_from_settings(
    bucket_root: str, settings: StoreSettings
) -> ObjectStoreFileIO:
    """The shared :class:`ObjectStoreFileIO` for a bucket and resolved settings."""
    with _CACHE_LOCK:
        fs = _CACHE.get((bucket_root, settings))
        if fs is None:
            fs = _CACHE[(bucket_root, settings)] = ObjectStoreFileIO(bucket_root, settings)
        return fs


def object_store_file_io(
    location: TableLocation,
    storage_options: Mapping[str, object] | None = None,
    hadoop_conf: Mapping[str, str] | None = None,
) -> ObjectStoreFileIO:
    """An :class:`ObjectStoreFileIO` for the bucket of ``location`` (see options.py for
    the precedence of ``storage_options``, the environment and ``hadoop_conf``)."""
    bucket_root = location.bucket_root
    bucket = bucket_root.split("://", 1)[1]
    settings = resolve_settings(location.scheme, bucket, storage_options, hadoop=hadoop_conf)
    return object_store_file_io_from_settings(bucket_root, settings)
