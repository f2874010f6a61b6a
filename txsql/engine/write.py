"""DataFrame -> Parquet data files under a table root, described as ``add`` actions.

Spark's own Parquet writer writes into a private staging directory under the table root
(``_txsql_staging/<uuid>/``; Delta readers ignore underscore-prefixed paths and only read
files the log names), then each part file is moved to its final place on the driver with a
hard link, which fails instead of overwriting. Writing straight into the root would let two
concurrent jobs clean up or clobber each other's files. On object stores (no rename, no
link) Spark writes straight into a fresh per-write directory under the root instead, under
Spark's scheme for the store (``s3a://`` for ``s3://``), see ``_write_to_object_store``.

Describing the written files as ``add`` actions (paths, partition values, footer stats)
is :mod:`txsql.engine.written_files`; the Delta statistics rules are
:mod:`txsql.engine.file_stats`.

Every file that reaches the table is recorded in the running transaction's ledger
(:mod:`txsql.storage.written`) the moment it appears, so a transaction that ends without
committing deletes exactly its own files. A moved file's modification time is the move:
VACUUM keeps files no commit names for the staging window counted from then, however long
Spark took to write them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import NullType

from txsql.engine.charvarchar import enforce_lengths, length_error
from txsql.engine.file_stats import file_stats, stats_leaves
from txsql.engine.parquet_ids import needs_field_ids, set_field_ids
from txsql.engine.scan_columns import sql_type
from txsql.engine.schema import TableSchema, quote, table_schema
from txsql.engine.write_rules import apply_write_rules, rule_error
from txsql.engine.written_files import (
    add_path,
    describe_written_files,
    partition_directory,
    partition_types,
    partition_values,
)
from txsql.errors import DiskFullError, SchemaError, StorageError, UnsupportedFeatureError
from txsql.log import features, iceberg_compat, row_tracking
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.column_rules import column_rules
from txsql.log.field_ids import field_ids
from txsql.log.schema import parse_schema
from txsql.storage.crashpoints import crash_point
from txsql.storage.durable import make_dirs, sync_files, write_error
from txsql.storage.factory import file_io_for, spark_uri
from txsql.storage.leftovers import STAGING_DIR
from txsql.storage.paths import join, parse_location
from txsql.storage.written import record_written, record_written_directory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


ONE_TASK_ROWS = 10_000
"""Rows few enough to write in one task (``DataFrame.coalesce(1)`` before the write):
Spark would write a tiny file per task and partition value, and one task finishes sooner
(benchmarks/README.md, "MERGE into a small target")."""


def in_one_task(df: DataFrame, rows: int | None) -> DataFrame:
    """``df`` computed and written by one task when it comes from at most
    :data:`ONE_TASK_ROWS` rows (``rows``; None: unknown, left as it is)."""
    return df.coalesce(1) if rows is not None and rows <= ONE_TASK_ROWS else df


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
    conformed: bool = False,
    protocol: Protocol | None = None,
) -> list[AddFile]:
    """Write ``df`` as new data files of the table described by ``metadata``.

    Args:
        spark: The session (the scan API's first argument too; ``df`` carries its own).
        df: Rows to write, columns named by the table's logical names in any order. Values
            are cast to the table's column types. On a table keeping stable row ids, the
            materialized row id and row commit version columns (named as
            ``scan_snapshot(with_lineage=True)`` returns them) are written as they are, when
            present: copied rows keep their ids, NULLs get fresh ones at commit.
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
        conformed: ``df`` holds exactly the table's columns, in order, each cast to its type
            (UPDATE's projection does that): where physical and logical columns are the
            same, the write then adds no projection of its own.
        protocol: The table's protocol, for what its features ask of data files
            (materializePartitionColumns: partition columns also in the files).

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
    # Stable row ids of copied rows travel as the table's materialized columns (no stats).
    lineage = row_tracking.materialized_columns(metadata.configuration) or ()
    carried = [name for name in lineage if name in df.columns]
    # Each projection is an analysis on the driver: skip the one that would change nothing.
    refilled = enforce and rewrite and bool(column_rules(metadata).generated)  # appended
    if conformed and mode == "none" and not refilled:
        void = [c.physical_name for c in schema.columns if isinstance(c.physical_type, NullType)]
        projected = df.drop(*void) if void else df
    else:
        texts = _physical_columns(df.drop(*carried), schema)
        lineage_texts = [f"CAST({quote(n)} AS BIGINT) AS {quote(n)}" for n in carried]
        projected = df.selectExpr(*texts, *lineage_texts)
    physical = {c.logical_name: c.physical_name for c in schema.columns}
    projected = enforce_lengths(projected, schema_json, physical)  # CHAR/VARCHAR(n)
    projected = _with_field_ids(projected, schema, _field_ids(schema_json, mode))
    materialized = bool(schema.partition_columns) and features.materializes_partitions(
        protocol, metadata.configuration
    )
    all_ids = needs_field_ids(mode, iceberg_compat.active(metadata.configuration))
    if materialized:  # the files keep the columns; Spark partitions by copies of them
        projected = projected.selectExpr(
            "*",
            *[
                f"{quote(c.physical_name)} AS {quote(partition_directory(c.physical_name, True))}"
                for c in schema.partition_columns
            ],
        )
    # "append" into a fresh, unique directory: Spark Connect rejects "errorifexists" here.
    writer = projected.write.mode("append")
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", max_records_per_file)
    if schema.partition_columns:
        writer = writer.partitionBy(
            *[partition_directory(c.physical_name, materialized) for c in schema.partition_columns]
        )
    if not location.is_local:
        if all_ids:
            raise UnsupportedFeatureError(
                f"txsql cannot write {table_root} on an object store: its files need Parquet "
                "field ids on array elements and map entries (column mapping 'id' mode or "
                "icebergCompatV2), which txsql sets on local files only",
                hint="Write this table with Delta Spark, or from a local or mounted path.",
            )
        return _write_to_object_store(
            writer, location.root, metadata, schema_json, schema, materialized
        )
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
        staged = sorted(_part_files(staging))
        if all_ids:
            ids = field_ids(parse_schema(metadata.schema_string))
            for rel in staged:
                set_field_ids(os.path.join(staging, rel), ids)
        moved = [_move(staging, root, rel) for rel in staged]
        # Spark's writer does not fsync: the files and their directory entries must be on
        # disk before a commit can name them.
        sync_files(os.path.join(root, rel) for rel in moved)
        crash_point("data_written")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        # Fails while another writer is still staging; whoever finishes last removes it.
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(root, STAGING_DIR))
    types = partition_types(metadata, schema)
    leaves = stats_leaves(schema_json, metadata)
    adds = []
    for rel in moved:
        final = os.path.join(root, rel)
        st = os.stat(final)
        adds.append(
            AddFile(
                path=add_path(rel),
                partition_values=partition_values(rel, types, materialized),
                size=st.st_size,
                modification_time=int(st.st_mtime * 1000),
                data_change=True,
                stats=file_stats(final, leaves),
            )
        )
    return adds


def _write_to_object_store(
    writer: Any,
    root: str,
    metadata: Metadata,
    schema_json: dict[str, Any],
    schema: TableSchema,
    materialized: bool,
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
    record_written_directory(target)  # a failed job's partial files are ours to delete
    try:
        writer.parquet(spark_uri(target))
    except Exception as exc:
        typed = length_error(exc) or rule_error(exc)
        if typed is None:
            raise
        raise typed from exc
    return describe_written_files(
        file_io_for(root), root, directory, metadata, schema_json, schema, materialized
    )


_DISK_FULL_MESSAGES = ("No space left on device", "File too large", "Disk quota exceeded")


def _disk_full(error: Exception, staging: str) -> DiskFullError | None:
    """A typed error when Spark's write failed because the disk or a limit ran out."""
    text = str(error)
    reason = next((m for m in _DISK_FULL_MESSAGES if m in text), None)
    if reason is None:
        return None
    return DiskFullError(f"writing the data files under {staging} failed: {reason}")


def _field_ids(schema_json: dict[str, Any], mode: str) -> dict[str, int]:
    """Column-mapping ids of the top-level columns (empty without mapping).

    Delta Spark writes them as Parquet field ids, so readers may resolve columns by id
    instead of by physical name; our files must allow both.
    """
    if mode not in ("name", "id"):
        return {}
    ids = {}
    for f in schema_json.get("fields", []):
        value = (f.get("metadata") or {}).get("delta.columnMapping.id")
        if isinstance(value, int):
            ids[f["name"]] = value
    return ids


def _with_field_ids(df: DataFrame, schema: TableSchema, field_ids: dict[str, int]) -> DataFrame:
    """``df`` (physical column names) with each mapped column's id as its Parquet field id."""
    if not field_ids:
        return df
    by_physical = {
        c.physical_name: field_ids[c.logical_name]
        for c in schema.columns
        if c.logical_name in field_ids
    }
    return df.select(
        [
            F.col(quote(name)).alias(name, metadata={"parquet.field.id": by_physical[name]})
            if name in by_physical
            else F.col(quote(name))
            for name in df.columns
        ]
    )


def _physical_columns(df: DataFrame, schema: TableSchema) -> list[str]:
    """The table's columns of ``df`` cast to their physical types, as SQL text (a
    ``Column`` built per part costs a py4j round trip per part: see ``scan_columns``)."""
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
    # A VOID column (kept from Delta Spark's table) has no Parquet column: always NULL.
    return [
        f"CAST({quote(given[c.logical_name.lower()])} AS {sql_type(c.physical_type)})"
        f" AS {quote(c.physical_name)}"
        for c in schema.columns
        if not isinstance(c.physical_type, NullType)
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
        os.utime(source)  # the file's age in the table starts now (VACUUM's window)
        os.link(source, target)  # EEXIST instead of clobbering another writer's file
    except FileExistsError as exc:
        raise StorageError(f"data file {target} already exists; refusing to replace it") from exc
    except OSError as exc:  # ENOSPC for the directory entry, EMLINK, EIO...
        raise write_error(target, exc, "move a data file to") from exc
    record_written(target)
    os.unlink(source)
    return rel
