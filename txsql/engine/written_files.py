"""Spark's Parquet part files described as Delta ``add`` actions.

Both write paths (local staging + hard link, object store straight into a fresh directory)
end with the same step: read each file's partition values back from Spark's ``name=value``
directories, URI-encode its relative path the way Delta Spark does, and take its stats from
the footer. On an object store only the footer is read (two ranged reads), never the file.
"""

from __future__ import annotations

import io
import os
from typing import Any
from urllib.parse import quote as url_quote
from urllib.parse import unquote

from txsql.engine.file_stats import file_stats, stats_leaves
from txsql.engine.schema import TableSchema
from txsql.errors import DataFileError
from txsql.log import schema as log_schema
from txsql.log.actions import AddFile, Metadata
from txsql.log.partition_values import parse_partition_value, serialize_partition_value
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import join

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# java.net.URI keeps these in a path; Delta Spark's add paths are Path.toUri strings.
_URI_SAFE = "/=:,;$&+!'()*@~"


def add_path(rel: str) -> str:
    """The ``add`` path of a file at ``rel`` (OS separators) below the table root."""
    return url_quote(rel.replace(os.sep, "/"), safe=_URI_SAFE)


def describe_written_files(
    fs: FileIO,
    root: str,
    directory: str,
    metadata: Metadata,
    schema_json: dict[str, Any],
    schema: TableSchema,
    materialized: bool = False,
) -> list[AddFile]:
    """``add`` actions for the Parquet part files below ``root/directory`` on ``fs``.

    Sizes and times come from the listing, stats from each file's footer (two ranged reads,
    never the whole file). Spark's ``_SUCCESS`` marker is deleted.
    """
    types = partition_types(metadata, schema)
    leaves = stats_leaves(schema_json, metadata)
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
                path=add_path(rel),
                partition_values=partition_values(rel, types, materialized),
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


def partition_types(metadata: Metadata, schema: TableSchema) -> dict[str, log_schema.DataType]:
    types = {f.name: f.type for f in log_schema.parse_schema(metadata.schema_string).fields}
    return {c.physical_name: types[c.logical_name] for c in schema.partition_columns}


def partition_directory(physical_name: str, materialized: bool) -> str:
    """The name of the ``name=value`` directories Spark writes for a partition column.

    When the files also hold the column (materializePartitionColumns), Spark partitions by
    a copy, since it drops the partition-by columns from the files; readers take values from
    the log, so the directory name is free.
    """
    return f"{physical_name}__partition" if materialized else physical_name


def partition_values(
    rel: str, types: dict[str, log_schema.DataType], materialized: bool = False
) -> dict[str, str | None]:
    """Read the typed partition values back from Spark's ``name=value`` directories."""
    by_directory = {partition_directory(n, materialized): n for n in types}
    values: dict[str, str | None] = {}
    for part in rel.split(os.sep)[:-1]:
        directory, _, text = part.partition("=")
        name = by_directory.get(unquote(directory))
        if name is None:
            continue
        raw = None if text == _HIVE_NULL else unquote(text)
        typed = parse_partition_value(raw, types[name])
        values[name] = serialize_partition_value(typed, types[name])
    return {name: values.get(name) for name in types}
