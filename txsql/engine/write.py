"""DataFrame -> Parquet data files under a table root, described as ``add`` actions.

Spark's own Parquet writer writes into a private staging directory under the table root
(``_txsql_staging/<uuid>/``; Delta readers ignore underscore-prefixed paths and only read
files the log names), then each part file is moved to its final place on the driver with a
hard link, which fails instead of overwriting. Writing straight into the root would let two
concurrent jobs clean up or clobber each other's files. On object stores (no rename, no
link) Spark writes straight into a fresh per-write directory under the root instead, under
Spark's scheme for the store (``s3a://`` for ``s3://``), see ``_write_to_object_store``.

Per-file statistics come from the Parquet footers (``pyarrow.parquet.read_metadata``) with
Delta Spark's rules (``StatisticsCollection``): the first ``delta.dataSkippingNumIndexedCols``
(32) leaf columns or those in ``delta.dataSkippingStatsColumns``; strings cut to a 32-char
prefix (the max gets a tie-breaker so it stays an upper bound); timestamps as ISO strings
truncated to milliseconds; no min/max for boolean, binary, array and map columns; a column
whose footer lacks min/max (or null counts) has that stat omitted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as url_quote
from urllib.parse import unquote

import pyarrow.parquet as pq
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from txsql.engine.charvarchar import enforce_lengths, length_error
from txsql.engine.schema import TableSchema, physical_name, quote, table_schema
from txsql.engine.write_rules import apply_write_rules, rule_error
from txsql.errors import DataFileError, DiskFullError, SchemaError, StorageError
from txsql.log import schema as log_schema
from txsql.log.actions import AddFile, Metadata
from txsql.storage.crashpoints import crash_point
from txsql.storage.durable import make_dirs, sync_files, write_error
from txsql.storage.factory import file_io_for, spark_uri
from txsql.storage.filesystem import FileIO
from txsql.storage.leftovers import STAGING_DIR
from txsql.storage.paths import join, parse_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# java.net.URI keeps these in a path; Delta Spark's add paths are Path.toUri strings.
_URI_SAFE = "/=:,;$&+!'()*@~"
_PREFIX_LENGTH = 32
_ASCII_MAX = 0x7F
_UTF16_MAX = (0xDBFF, 0xDFFF)  # U+10FFFF as a UTF-16 surrogate pair
_NO_MIN_MAX = (BooleanType, BinaryType, ArrayType, MapType)


def write_data_files(
    spark: SparkSession,
    df: DataFrame,
    table_root: str,
    metadata: Metadata,
    *,
    max_records_per_file: int | None = None,
    enforce: bool = True,
    rewrite: bool = False,
    identity: bool = False,
) -> list[AddFile]:
    """Write ``df`` as new data files of the table described by ``metadata``.

    Args:
        spark: The session (the scan API's first argument too; ``df`` carries its own).
        df: Rows to write, columns named by the table's logical names in any order. Values
            are cast to the table's column types.
        table_root: Local path of the table root.
        metadata: The table's ``metaData``: schema, partition columns and configuration
            (stats settings, column mapping mode).
        max_records_per_file: Optional cap on rows per file (Spark's ``maxRecordsPerFile``).
        enforce: Apply the table's column rules (:mod:`txsql.engine.write_rules`): fill in
            omitted generated/default/identity columns, check CHECK constraints, NOT NULL
            and generated values. False only for copies of committed rows (OPTIMIZE).
        rewrite: ``df`` holds rows changed by UPDATE/MERGE: generated columns are
            recomputed from the new values rather than checked.
        identity: Hand out values for omitted identity columns; the caller must commit
            the new high-water marks (:func:`write_rules.generated_high_water_marks`).

    Returns:
        One ``add`` per file, sorted by path: relative URI-encoded path, size,
        modificationTime, partitionValues serialized per the protocol, ``dataChange=True``
        and stats JSON. Empty if ``df`` has no rows. Nothing is committed.

    Raises:
        SchemaError: If ``df`` lacks a table column or has columns the table lacks.
        ConstraintViolationError: A row breaks a CHECK constraint, NOT NULL or a generated
            column's expression (the subclass says which); nothing was written.
        StorageError: If a file could not be moved into the table.
        StorageWriteError: If a moved file could not be made durable (fsync failed).
        DiskFullError: If Spark's write ran out of disk space (the table is unchanged).
    """
    del spark
    location = parse_location(table_root)
    schema_json = json.loads(metadata.schema_string)
    mode = metadata.configuration.get("delta.columnMapping.mode", "none").lower()
    schema = table_schema(schema_json, metadata.partition_columns, mode)
    if enforce:
        df = apply_write_rules(df, metadata, rewrite=rewrite, identity=identity)
    projected = df.select(_physical_columns(df, schema))
    physical = {c.logical_name: c.physical_name for c in schema.columns}
    projected = enforce_lengths(projected, schema_json, physical)  # CHAR/VARCHAR(n)
    # "append" into a fresh, unique directory: Spark Connect rejects "errorifexists" here.
    writer = projected.write.mode("append")
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", max_records_per_file)
    if schema.partition_columns:
        writer = writer.partitionBy(*[c.physical_name for c in schema.partition_columns])
    if not location.is_local:
        return _write_to_object_store(writer, location.root, metadata, schema_json, schema)
    root = location.path
    staging = os.path.join(root, STAGING_DIR, uuid.uuid4().hex)
    try:
        try:
            writer.parquet(staging)
        except Exception as exc:
            typed = _disk_full(exc, staging) or length_error(exc) or rule_error(exc)
            if typed is None:
                raise
            raise typed from exc
        moved = [_move(staging, root, rel) for rel in sorted(_part_files(staging))]
        # Spark's writer does not fsync: the files and their directory entries must be on
        # disk before a commit can name them.
        sync_files(os.path.join(root, rel) for rel in moved)
        crash_point("data_written")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        # Fails while another writer is still staging; whoever finishes last removes it.
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(root, STAGING_DIR))
    partition_types = _partition_types(metadata, schema)
    leaves = _stats_leaves(schema_json, metadata)
    adds = []
    for rel in moved:
        final = os.path.join(root, rel)
        st = os.stat(final)
        adds.append(
            AddFile(
                path=url_quote(rel.replace(os.sep, "/"), safe=_URI_SAFE),
                partition_values=_partition_values(rel, partition_types),
                size=st.st_size,
                modification_time=int(st.st_mtime * 1000),
                data_change=True,
                stats=file_stats(final, leaves),
            )
        )
    return adds


def _partition_types(metadata: Metadata, schema: TableSchema) -> dict[str, log_schema.DataType]:
    types = {f.name: f.type for f in log_schema.parse_schema(metadata.schema_string).fields}
    return {c.physical_name: types[c.logical_name] for c in schema.partition_columns}


def _write_to_object_store(
    writer: Any, root: str, metadata: Metadata, schema_json: dict[str, Any], schema: TableSchema
) -> list[AddFile]:
    """Object stores: Spark writes straight to the final names, no staging rename.

    A rename on an object store is a copy plus a delete, neither atomic nor cheap. Each
    write gets its own fresh directory under the table root (a uuid), so two concurrent
    jobs never share Spark's ``_temporary`` or part-file names; the part files Spark leaves
    there are the data files the commit names. Nothing references them until the commit,
    and VACUUM removes the files of a failed write once they pass the retention period.
    """
    directory = uuid.uuid4().hex
    target = join(root, directory)
    try:
        writer.parquet(spark_uri(target))
    except Exception as exc:
        typed = length_error(exc) or rule_error(exc)
        if typed is None:
            raise
        raise typed from exc
    return describe_written_files(file_io_for(root), root, directory, metadata, schema_json, schema)


def describe_written_files(
    fs: FileIO,
    root: str,
    directory: str,
    metadata: Metadata,
    schema_json: dict[str, Any],
    schema: TableSchema,
) -> list[AddFile]:
    """``add`` actions for the Parquet part files below ``root/directory`` on ``fs``.

    Sizes and times come from the listing, stats from each file's footer (two ranged reads,
    never the whole file). Spark's ``_SUCCESS`` marker is deleted.
    """
    partition_types = _partition_types(metadata, schema)
    leaves = _stats_leaves(schema_json, metadata)
    adds = []
    for status in sorted(fs.list_tree(join(root, directory)), key=lambda f: f.name):
        parts = status.name.split("/")
        if any(p.startswith((".", "_")) for p in parts) or not status.name.endswith(".parquet"):
            if status.name == "_SUCCESS":
                fs.delete(join(root, directory, status.name))
            continue
        rel = f"{directory}/{status.name}"
        footer = parquet_footer(fs, join(root, rel), status.size)
        adds.append(
            AddFile(
                path=url_quote(rel, safe=_URI_SAFE),
                partition_values=_partition_values(rel, partition_types),
                size=status.size,
                modification_time=status.modification_time,
                data_change=True,
                stats=file_stats(footer, leaves),
            )
        )
    return adds


_FOOTER_GUESS = 64 * 1024


def parquet_footer(fs: FileIO, path: str, size: int) -> io.BytesIO:
    """The footer of a Parquet file as a tiny stand-alone file ``pq.read_metadata`` reads
    (the metadata's offsets point into the original file, but reading it needs no data)."""
    tail = fs.read_range(path, max(0, size - _FOOTER_GUESS), min(size, _FOOTER_GUESS))
    if len(tail) < 8 or tail[-4:] != b"PAR1":
        raise DataFileError(f"data file {path} written by Spark is not a Parquet file")
    length = int.from_bytes(tail[-8:-4], "little")
    if length + 8 > len(tail):
        tail = fs.read_range(path, size - length - 8, length + 8)
    return io.BytesIO(b"PAR1" + tail[-(length + 8) :])


_DISK_FULL_MESSAGES = ("No space left on device", "File too large", "Disk quota exceeded")


def _disk_full(error: Exception, staging: str) -> DiskFullError | None:
    """A typed error when Spark's write failed because the disk or a limit ran out."""
    text = str(error)
    reason = next((m for m in _DISK_FULL_MESSAGES if m in text), None)
    if reason is None:
        return None
    return DiskFullError(f"writing the data files under {staging} failed: {reason}")


def _physical_columns(df: DataFrame, schema: TableSchema) -> list[Column]:
    given = {c.lower(): c for c in df.columns}
    wanted = {c.logical_name.lower() for c in schema.columns}
    extra = [c for c in df.columns if c.lower() not in wanted]
    missing = [c.logical_name for c in schema.columns if c.logical_name.lower() not in given]
    if extra or missing:
        raise SchemaError(
            "the rows to write do not match the table's columns"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not in the table: {', '.join(extra)}" if extra else ""),
            hint="Name every table column exactly once (NULL for unknown values).",
        )
    return [
        F.col(quote(given[c.logical_name.lower()])).cast(c.physical_type).alias(c.physical_name)
        for c in schema.columns
    ]


def _part_files(staging: str) -> Iterator[str]:
    for directory, _, names in os.walk(staging):
        for name in names:
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                yield os.path.relpath(os.path.join(directory, name), staging)


def _move(staging: str, root: str, rel: str) -> str:
    """Move one staged file to ``root/rel`` without ever replacing an existing file."""
    source, target = os.path.join(staging, rel), os.path.join(root, rel)
    make_dirs(os.path.dirname(target))
    try:
        os.link(source, target)  # EEXIST instead of clobbering another writer's file
    except FileExistsError as exc:
        raise StorageError(f"data file {target} already exists; refusing to replace it") from exc
    except OSError as exc:  # ENOSPC for the directory entry, EMLINK, EIO...
        raise write_error(target, exc, "move a data file to") from exc
    os.unlink(source)
    return rel


def _partition_values(rel: str, types: dict[str, log_schema.DataType]) -> dict[str, str | None]:
    """Read the typed partition values back from Spark's ``name=value`` directories."""
    values: dict[str, str | None] = {}
    for part in rel.split(os.sep)[:-1]:
        name, _, text = part.partition("=")
        name = unquote(name)
        if name not in types:
            continue
        raw = None if text == _HIVE_NULL else unquote(text)
        typed = log_schema.parse_partition_value(raw, types[name])
        values[name] = log_schema.serialize_partition_value(typed, types[name])
    return {name: values.get(name) for name in types}


# --- statistics ------------------------------------------------------------------------


def _stats_leaves(
    schema_json: dict[str, Any], metadata: Metadata
) -> list[tuple[tuple[str, ...], DataType]]:
    """The (physical path, type) of every leaf column that gets stats, in schema order."""
    conf = metadata.configuration
    mode = conf.get("delta.columnMapping.mode", "none").lower()
    schema = StructType.fromJson(schema_json)
    partitions = {p.lower() for p in metadata.partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in partitions]
    leaves: list[tuple[tuple[str, ...], tuple[str, ...], DataType]] = []

    def walk(fields: list[Any], logical: tuple[str, ...], phys: tuple[str, ...]) -> None:
        for f in fields:
            lpath = (*logical, f.name.lower())
            ppath = (*phys, physical_name(f.name, f.metadata, mode))
            if isinstance(f.dataType, StructType):
                walk(f.dataType.fields, lpath, ppath)
            else:
                leaves.append((lpath, ppath, f.dataType))

    walk(data_fields, (), ())
    chosen = conf.get("delta.dataSkippingStatsColumns")
    if chosen:
        wanted = [tuple(_split_column(c.strip().lower())) for c in chosen.split(",") if c.strip()]
        return [(p, t) for lp, p, t in leaves if any(lp[: len(w)] == w for w in wanted)]
    limit = int(conf.get("delta.dataSkippingNumIndexedCols", "32"))
    selected = leaves if limit < 0 else leaves[:limit]
    return [(p, t) for _, p, t in selected]


def _split_column(name: str) -> list[str]:
    """Split ``a.`b.c`.d`` into its parts (backquotes protect dots)."""
    parts, current, quoted, i = [], "", False, 0
    while i < len(name):
        ch = name[i]
        if ch == "`":
            if quoted and name[i + 1 : i + 2] == "`":
                current += "`"
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    return parts


def file_stats(path: str | io.BytesIO, leaves: list[tuple[tuple[str, ...], DataType]]) -> str:
    """Delta stats JSON for one Parquet file (a path or its footer), from its footer."""
    meta = pq.read_metadata(path)
    columns: dict[str, list[Any]] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            columns.setdefault(chunk.path_in_schema, []).append((chunk, group.num_rows))
    mins: dict[str, Any] = {}
    maxes: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path_parts, data_type in leaves:
        if isinstance(data_type, (ArrayType, MapType)):
            continue  # leaf null counts of nested columns are not the column's null count
        chunks = columns.get(".".join(path_parts))
        if chunks is None:
            continue
        null_count, low, high = _combine(chunks)
        if null_count is not None:
            _put(nulls, path_parts, null_count)
        if isinstance(data_type, _NO_MIN_MAX) or low is None or high is None:
            continue
        low_json, high_json = _stat_value(low, data_type, False), _stat_value(high, data_type, True)
        if low_json is not None and high_json is not None:
            _put(mins, path_parts, low_json)
            _put(maxes, path_parts, high_json)
    stats = {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxes, "nullCount": nulls}
    return _dumps(stats)


def _combine(chunks: list[Any]) -> tuple[int | None, Any, Any]:
    """Null count and min/max over row groups; None where a footer lacks the statistic."""
    null_count: int | None = 0
    low: Any = None
    high: Any = None
    min_max_ok = True
    for chunk, num_rows in chunks:
        st = chunk.statistics
        if st is None or not st.has_null_count:
            null_count = None
        elif null_count is not None:
            null_count += st.null_count
        if st is not None and st.has_min_max:
            low = st.min if low is None or st.min < low else low
            high = st.max if high is None or st.max > high else high
        elif not (st is not None and st.has_null_count and st.null_count == num_rows):
            min_max_ok = False  # an all-NULL row group has no min/max and needs none
    return null_count, (low if min_max_ok else None), (high if min_max_ok else None)


def _stat_value(value: Any, data_type: DataType, is_max: bool) -> Any:
    if isinstance(data_type, StringType):
        text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        return truncate_max(text) if is_max else truncate_min(text)
    if isinstance(data_type, (TimestampType, TimestampNTZType)) and isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
        return text + ("Z" if isinstance(data_type, TimestampType) else "")
    if isinstance(data_type, DateType) and isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(data_type, DecimalType):
        return Decimal(value) if not isinstance(value, Decimal) else value
    if isinstance(value, float) and value != value:
        return None  # NaN is no bound
    if isinstance(value, (int, float)):
        return value
    return None


def truncate_min(text: str, prefix: int = _PREFIX_LENGTH) -> str:
    """Delta's min-string truncation: a prefix of ``prefix`` UTF-16 units, never splitting
    a surrogate pair.

    >>> truncate_min("abcdef", 3)
    'abc'
    """
    units = _utf16(text)
    if len(units) <= prefix:
        return text
    end = prefix + 1 if 0xD800 <= units[prefix - 1] <= 0xDBFF else prefix
    return _from_utf16(units[:end])


def truncate_max(text: str, prefix: int = _PREFIX_LENGTH) -> str | None:
    """Delta Spark's ``truncateMaxStringAgg``: a prefix plus a tie-breaker that keeps it an
    upper bound in UTF-8 order, or None if no bound within twice the prefix exists.

    >>> truncate_max("abcdef", 3)
    'abc\\x7f'
    >>> truncate_max("ab", 3)
    'ab'
    """
    units = _utf16(text)
    if len(units) <= prefix:
        return text
    current = len(_utf16(truncate_min(text, prefix)))
    while current <= 2 * prefix:
        if current >= len(units):
            return text
        if tuple(units[current : current + 2]) == _UTF16_MAX:
            current += 2  # U+10FFFF cannot be exceeded: keep it and look further
        elif units[current] < _ASCII_MAX:
            return _from_utf16(units[:current]) + chr(_ASCII_MAX)
        else:
            return _from_utf16(units[:current]) + "\U0010ffff"
    return None


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _from_utf16(units: list[int]) -> str:
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def _dumps(value: Any) -> str:
    """JSON with decimals written as exact numbers (the json module cannot)."""
    if isinstance(value, dict):
        items = (json.dumps(k, ensure_ascii=False) + ":" + _dumps(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, Decimal):
        return format(value, "f")
    return json.dumps(value, ensure_ascii=False)
