"""The data files of one scan: where they are, how Spark names them, the helper columns.

Shared by the scan plan (:mod:`txsql.engine.scan`), the per-file constants
(:mod:`txsql.engine.file_constants`) and the deletion-vector filter
(:mod:`txsql.engine.dv_filter`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import numpy as np
from pyspark.sql.types import LongType

from txsql.engine.names import fresh_names
from txsql.engine.scan_cache import SparkPathCache
from txsql.engine.schema import TableSchema
from txsql.errors import DataFileError, TxSqlError
from txsql.log.actions import AddFile
from txsql.storage.factory import spark_uri
from txsql.storage.paths import is_local_location, resolve_in_root

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

FILE_COLUMN = "_file"
ROW_INDEX_COLUMN = "_row_index"
# Spark's hidden per-file struct; a data column of the same name shadows it for F.col, so
# it is always reached through DataFrame.metadataColumn.
_METADATA = "_metadata"
_GLOB_CHARS = "\\{}[]*?"
# Above this many paths (default 32) Spark lists the files with a Spark job of its own; our
# paths are known files, so the driver checks them itself (see read_files).
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
# Scans in threads must not interleave their set/restore of the session's threshold.
_LISTING_LOCK = threading.Lock()
_SPARK_PATHS = SparkPathCache()


@dataclass(frozen=True)
class ScanFile:
    """One active file of the scanned version."""

    add: AddFile
    local_path: str
    spark_path: str = ""  # _metadata.file_path as Spark reports it

    @property
    def crc(self) -> int:
        """crc32 of Spark's path: the file's long key when the CRCs of a scan are distinct."""
        return zlib.crc32(self.spark_path.encode("utf-8"))


@dataclass(frozen=True)
class ScanHelpers:
    """Helper column names of one scan, fresh against the table's logical and physical names.

    A user column named ``_txsql_fk`` or ``_file`` must survive the joins untouched, so no
    helper name is fixed (see txsql/engine/names.py).
    """

    key: str
    row: str
    dv_key: str
    dv_path: str
    dv_row: str
    info_key: str
    info_file: str
    parts: tuple[str, ...]
    file_out: str
    row_out: str
    base_row_id: str
    base_version: str

    @staticmethod
    def of(schema: TableSchema) -> ScanHelpers:
        taken = [c.logical_name for c in schema.columns] + [c.physical_name for c in schema.columns]
        file_out, row_out = row_id_columns(c.logical_name for c in schema.columns)
        taken += [file_out, row_out]
        bases = ["_txsql_fk", "_txsql_ri", "_txsql_dk", "_txsql_dp", "_txsql_dr"]
        bases += ["_txsql_ck", "_txsql_file", "_txsql_rb", "_txsql_rv"]
        bases += [f"_txsql_p{i}" for i in range(len(schema.partition_columns))]
        names = fresh_names(bases, taken)
        key, row, dv_key, dv_path, dv_row, info_key, info_file, base_id, base_version = names[:9]
        return ScanHelpers(
            key,
            row,
            dv_key,
            dv_path,
            dv_row,
            info_key,
            info_file,
            tuple(names[9:]),
            file_out,
            row_out,
            base_id,
            base_version,
        )


@dataclass(frozen=True)
class ScanLayout:
    """What every step of one scan shares, so each takes one argument, not four."""

    schema: TableSchema
    helpers: ScanHelpers
    long_keys: bool  # file keys are crc32 longs (distinct CRCs), else Spark's path strings
    with_row_ids: bool  # the scan returns ``_file`` and ``_row_index``
    # The materialized (row id, row commit version) columns of a row-tracking table, read
    # and returned under their own names with every row's stable values (see scan_snapshot).
    lineage: tuple[str, str] | None = None
    stored_lineage: bool = False  # the lineage columns as the files store them (NULL: fresh)


def row_id_columns(column_names: Iterable[str]) -> tuple[str, str]:
    """Names of the hidden file and row-index columns of a scan of a table with these columns.

    ``_file`` and ``_row_index`` unless the table has columns of those names: the user's
    columns win and the hidden ones get a suffix (``_file_1``...).
    """
    file_out, row_out = fresh_names([FILE_COLUMN, ROW_INDEX_COLUMN], column_names)
    return file_out, row_out


def resolve_path(table_root: str, path: str) -> str:
    """The local file a log ``path`` names (relative URI-encoded, or an absolute URI).

    >>> resolve_path("/t", "p%3D1/a%20b.parquet")
    '/t/p=1/a b.parquet'
    >>> resolve_path("/t", "file:///data/x.parquet")
    '/data/x.parquet'
    """
    parsed = urlparse(path)
    if not is_local_location(table_root) or parsed.scheme not in ("file", ""):
        # Object stores: the URI Spark's file system reads (s3://... -> s3a://...).
        return spark_uri(resolve_in_root(table_root, path))
    if parsed.scheme in ("file", ""):
        local = unquote(parsed.path if parsed.scheme else path)
        if parsed.scheme or local.startswith("/"):
            return os.path.normpath(local)
        return os.path.normpath(os.path.join(table_root, local))
    raise TxSqlError(f"data file {path!r} is not on the local file system")


def is_present(path: str) -> bool:
    """Whether a data file is still there (object stores: assumed; Spark's read reports it)."""
    # A HEAD request per file would cost more than the scan it guards.
    return os.path.isfile(path) if "://" not in path else True


def metadata_field(df: DataFrame, field: str) -> Column:
    """A field of Spark's hidden ``_metadata`` struct (``file_path``, ``row_index``)."""
    # Not F.col("_metadata.x"): a data column named _metadata would shadow Spark's struct.
    return df.metadataColumn(_METADATA).getField(field)


def read_files(
    spark: SparkSession,
    schema: TableSchema,
    files: list[ScanFile],
    lineage: tuple[str, str] | None = None,
) -> DataFrame:
    """One Parquet scan over ``files`` (plus the ``lineage`` columns, NULL in files without
    them); fills in each file's ``spark_path``."""
    paths = [_escape_glob(f.local_path) for f in files]
    local_paths = [f.local_path for f in files]
    # Known paths skip inputFiles(). A file gone since is left to Spark's listing below,
    # whose error is typed and diagnosed (e.g. as a version VACUUM emptied) as ever.
    known = _SPARK_PATHS.get_all(id(spark), local_paths)
    if known is not None and not all(is_present(p) for p in local_paths):
        known = None
    with _listing_on_driver(spark, len(paths)):
        read_schema = schema.physical_read_schema()
        for name in lineage or ():
            read_schema = read_schema.add(name, LongType(), True)
        df = spark.read.schema(read_schema).parquet(*paths)
    if known is None:
        seen = _listed(df)
        raise_missing([p for p in local_paths if p not in seen])
        known = [seen[p] for p in local_paths]
        _SPARK_PATHS.put(id(spark), dict(zip(local_paths, known)))
    for i, (f, spark_path) in enumerate(zip(files, known)):
        files[i] = ScanFile(f.add, f.local_path, spark_path)
    return df


def _listed(df: DataFrame) -> dict[str, str]:
    """Local path (or unquoted object-store URI) -> Spark's path, of every file ``df`` reads."""
    seen: dict[str, str] = {}
    for uri in df.inputFiles():
        if not uri.startswith("file:"):  # an object store: keyed by the unquoted URI
            seen[unquote(uri)] = uri
            continue
        # inputFiles() says file:///x where _metadata.file_path says file:/x.
        spark_path = "file:/" + uri[len("file:") :].lstrip("/")
        seen[os.path.normpath(unquote(urlparse(spark_path).path))] = spark_path
    return seen


@contextlib.contextmanager
def _listing_on_driver(spark: SparkSession, paths: int) -> Iterator[None]:
    """Keep Spark from listing ``paths`` files with a parallel job while inside.

    Every path is a file the log names, so "listing" is one status call each, a few
    milliseconds for thousands of local files, where the parallel listing costs a Spark
    job (0.1-0.5 s): a DELETE touching 40 files would run two jobs instead of one.
    """
    with _LISTING_LOCK:
        current = spark.conf.get(_LISTING_THRESHOLD)
        if current is None or not current.isdigit() or paths <= int(current):
            yield
            return
        spark.conf.set(_LISTING_THRESHOLD, str(paths))
        try:
            yield
        finally:
            spark.conf.set(_LISTING_THRESHOLD, current)


def raise_missing(missing: list[str]) -> None:
    """The typed error for data files Spark cannot read, if there are any."""
    if missing:
        raise DataFileError(
            f"{len(missing)} data file(s) are missing or unreadable, e.g. {missing[0]}",
            hint="Files deleted outside the log (or named with a leading '_' or '.', which "
            "Spark skips) cannot be read; RESTORE an older version or repair the table.",
        )


def _escape_glob(path: str) -> str:
    # Spark globs the paths it is given; a '[' in a partition value must stay literal.
    if not any(c in path for c in _GLOB_CHARS):
        return path
    return "".join("\\" + c if c in _GLOB_CHARS else c for c in path)


def sql_string(text: str) -> str:
    """A SQL expression for the string ``text`` that no character can break out of.

    Hex-encoded UTF-8 cast to string, so quotes, backslashes and newlines in partition
    values or paths need no escaping rules (which depend on session settings).

    >>> sql_string("a'b")
    "CAST(X'612762' AS STRING)"
    """
    return f"CAST(X'{text.encode('utf-8').hex()}' AS STRING)"


def sql_long(value: int) -> str:
    """A SQL bigint literal; the minimum long has no positive counterpart to negate.

    >>> sql_long(-5), sql_long(-(2**63))
    ('-5L', '(-9223372036854775807L - 1L)')
    """
    if value == -(2**63):
        return "(-9223372036854775807L - 1L)"
    return f"{value}L"


def row_keys(crc: int, rows: np.ndarray) -> np.ndarray:
    """Spark's ``shiftleft(crc, 32) | row`` (the one long key of a deleted row) for row
    indexes below 2**32, as signed longs: Spark's bigint shift wraps a CRC's high bit into
    the sign bit; so does the view."""
    return ((np.uint64(crc) << np.uint64(32)) | rows.astype(np.uint64)).view(np.int64)
