"""Snapshot -> Spark DataFrame: every active file, partition values, deletion vectors.

Only the DataFrame API is used (``spark.read``, ``createDataFrame``, ``mapInArrow``, joins),
so a scan works on classic PySpark and on Spark Connect alike.

How a scan is built (modules: scan_files for the file list and helper names,
file_constants for partition values and ``_file``, dv_filter for deleted rows):

* Data files are read by Spark's Parquet reader with the table's physical schema (files
  written before a column existed yield NULLs) and renamed to logical names.
* Per-file constants (partition values taken from the log, never from directory names, and
  the log path for ``_file``) are looked up on a file key, ``crc32(_metadata.file_path)``
  (a long; the CRCs of the scanned files are checked distinct on the driver): up to a few
  thousand files as ``element_at(map literal, key)``, which Spark folds once per query and
  prunes when the query does not use the constant; above that (or on a CRC collision) by
  a broadcast join with a per-file table. Unpartitioned tables read without row ids need
  no constant at all.
* Deletion vectors: files without a DV are read by a plain scan; files with one are read
  with ``_metadata.row_index`` and filtered on one long key ``crc32(path) << 32 |
  row_index``: up to ``_LITERAL_KEYS`` deleted rows by ``NOT (key IN (...literals))``
  (Spark's hash-set ``InSet``), above by a broadcast anti-join with the expanded keys
  (expanded by the driver up to ``_DRIVER_EXPANSION_ROWS``, else by a ``mapInArrow`` on
  the executors, and cached per (session, files, DV ids)). The two scans are unioned.
  Filters on data columns still reach the Parquet reader (row-group skipping) with the
  row index present, through the union, the filter and the anti-join.
* The planned DataFrame is cached per (session, table root, schema, files with their DVs):
  a notebook querying the same version again skips the file listing and per-file tables;
  only the data files' presence is re-checked (``os.path.isfile``).

Why these strategies (measurements and the command that reproduces them:
``benchmarks/README.md``, "Scans with deletion vectors"): rows crossing into Python
(``mapInArrow``, pandas UDFs) cost 10x a JVM filter and more, so deleted rows are dropped in
the JVM (Python at most expands a version's keys once); a literal ``IN`` set runs no
Spark job but its SQL text costs planning time that grows with the keys, so it is kept
for few keys; a broadcast join costs one job per query, so per-file constants are map
literals while their text stays small.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import LongType, StringType, StructField, StructType

from txsql.engine import dv_filter
from txsql.engine.file_constants import attach_constants, constant_lookups, uses_literals
from txsql.engine.scan_cache import ScanCache
from txsql.engine.scan_columns import select_output, with_helpers
from txsql.engine.scan_files import (
    FILE_COLUMN,
    ROW_INDEX_COLUMN,
    ScanFile,
    ScanHelpers,
    ScanLayout,
    is_present,
    raise_missing,
    read_files,
    resolve_path,
    row_id_columns,
)
from txsql.engine.schema import TableSchema, table_schema
from txsql.errors import SchemaError
from txsql.log import row_tracking

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from txsql.log.snapshot import Snapshot

__all__ = [
    "FILE_COLUMN",
    "ROW_INDEX_COLUMN",
    "pushed_filters",
    "resolve_path",
    "row_id_columns",
    "scan_snapshot",
    "snapshot_row_ids",
]


def snapshot_row_ids(snapshot: Snapshot) -> tuple[str, str]:
    """:func:`row_id_columns` for a snapshot's schema."""
    return row_id_columns(f["name"] for f in snapshot.schema_json.get("fields", []))


def scan_snapshot(
    spark: SparkSession,
    snapshot: Snapshot,
    *,
    with_row_ids: bool = False,
    with_lineage: bool = False,
    stored_lineage: bool = False,
) -> DataFrame:
    """Read the table as of ``snapshot``.

    Args:
        spark: The session to read with (classic or Connect).
        snapshot: The table version to read.
        with_row_ids: Also return hidden ``_file`` (the add action's ``path``, as in the
            log) and ``_row_index`` (0-based physical row position in that Parquet file)
            columns, which DML turns into deletion vectors. If the table has columns of
            those names, the hidden ones are renamed (``_file_1``...): see
            :func:`snapshot_row_ids`. They are always the last two columns.
        with_lineage: With row ids, on a table keeping stable row ids
            (``delta.enableRowTracking``), also return each row's stable row id and row
            commit version, named as the table's materialized columns
            (:func:`txsql.log.row_tracking.materialized_columns`), before ``_file``: a
            statement that copies rows writes them on, and every copy keeps its identity.
        stored_lineage: With lineage, return the values as the files store them instead
            (NULL for a fresh row): a caller that needs the ids of a few rows only (MERGE's
            matched rows) resolves them after its join, where they cost per row joined
            rather than per row scanned
            (:func:`~txsql.engine.file_constants.stable_row_id_sql`).

    Returns:
        The live rows, columns in schema order with logical names (then the hidden ones).
        Helper columns used on the way are named fresh per scan, so no table column is
        shadowed or overwritten.

    Raises:
        DataFileError: If a data file is missing or Spark would silently skip it.
        CorruptDeletionVectorError: If a deletion vector file is missing or damaged (the
            DVs are expanded eagerly so this surfaces here, not in the caller's action).
    """
    schema = table_schema(
        snapshot.schema_json, snapshot.partition_columns, snapshot.column_mapping_mode
    )
    lineage = None
    if with_row_ids and with_lineage:
        lineage = row_tracking.materialized_columns(snapshot.configuration)
    layout = ScanLayout(schema, ScanHelpers.of(schema), True, with_row_ids, lineage, stored_lineage)
    with _collations_checked(schema):
        return _scan(spark, snapshot, layout)


def _scan(spark: SparkSession, snapshot: Snapshot, layout: ScanLayout) -> DataFrame:
    if not snapshot.files:
        return _empty(spark, layout)
    files = [ScanFile(f, resolve_path(snapshot.table_root, f.path)) for f in snapshot.files]
    key = _scan_key(spark, snapshot, layout)
    cached = _SCAN_CACHE.get(key)
    if cached is not None and cached.sparkSession is spark:
        # Planned before: only re-check that no data file vanished since (VACUUM, a manual
        # delete), which the planning below would have reported.
        raise_missing([f.local_path for f in files if not is_present(f.local_path)])
        return cached
    df = _plan_scan(spark, snapshot, files, layout)
    _SCAN_CACHE.put(key, df)
    return df


def _plan_scan(
    spark: SparkSession, snapshot: Snapshot, files: list[ScanFile], layout: ScanLayout
) -> DataFrame:
    """The scan DataFrame: plain and DV files read, DVs applied, constants attached."""
    schema, with_row_ids = layout.schema, layout.with_row_ids
    # Unpartitioned tables scanned without row ids need no per-file constant at all.
    constants = with_row_ids or bool(schema.partition_columns)
    plain = [f for f in files if f.add.deletion_vector is None]
    deleted = [f for f in files if f.add.deletion_vector is not None]
    parts = [
        (read_files(spark, schema, group, layout.lineage), group)
        for group in (plain, deleted)
        if group
    ]
    scanned = [f for _, group in parts for f in group]
    long_keys = len({f.crc for f in scanned}) == len(scanned)
    layout = replace(layout, long_keys=long_keys)
    # Both sides of the union get the same helper columns (a row index read for nothing
    # costs nothing measurable, and Spark prunes it where no one uses it).
    key, row = constants or bool(deleted), with_row_ids or bool(deleted)
    frames = []
    for df, group in parts:
        df = with_helpers(df, layout, key=key, row=row)
        if group is deleted:
            df = dv_filter.drop_deleted(spark, df, group, snapshot.table_root, layout)
        frames.append(df)
    df = reduce(lambda a, b: a.unionByName(b), frames)
    lookups: dict[str, str] = {}
    if constants and uses_literals(scanned, long_keys):
        lookups = constant_lookups(scanned, layout)
    elif constants:
        df = attach_constants(spark, df, scanned, layout)
    return select_output(df, layout, lookups)


@contextlib.contextmanager
def _collations_checked(schema: TableSchema) -> Iterator[None]:
    """Spark knows a collation's name only when it first uses the type (here, planning the
    scan); an id txsql mapped but Spark does not know (``icu.xx_YY``) is a typed error."""
    try:
        yield
    except Exception as exc:
        found = re.search(r"\[COLLATION_INVALID_NAME\][^\n]*", str(exc))
        if found is None:
            raise
        collated = [
            f"{c.logical_name} ({c.logical_type.simpleString()})"
            for c in schema.columns
            if "collate" in c.logical_type.simpleString()
        ]
        raise SchemaError(
            f"column(s) {', '.join(collated)} use a collation Spark does not know: "
            f"{found.group(0)}",
            hint="Read this table with the engine that wrote it.",
        ) from None


def pushed_filters(df: DataFrame) -> list[str]:
    """The filters Spark pushes into the Parquet reader of each file scan in ``df``'s
    physical plan, as ``EXPLAIN FORMATTED`` prints them (``[IsNotNull(id), EqualTo(id,5)]``):
    the reader skips the row groups and pages their statistics rule out."""
    printed = io.StringIO()
    # DataFrame.explain prints (classic and Connect alike); no other API returns the text.
    with contextlib.redirect_stdout(printed):
        df.explain(mode="formatted")
    prefix = "PushedFilters:"
    lines = printed.getvalue().splitlines()
    return [line[len(prefix) :].strip() for line in lines if line.startswith(prefix)]


def _scan_key(spark: SparkSession, snapshot: Snapshot, layout: ScanLayout) -> tuple[Any, ...]:
    """What a scan's plan depends on: session, table root, schema and every file with its DV."""
    files = tuple(
        (f.path, f.dv_id, f.size, tuple(sorted(f.partition_values.items()))) for f in snapshot.files
    )
    schema = json.dumps(snapshot.schema_json, sort_keys=True)
    table_layout = (tuple(snapshot.partition_columns), snapshot.column_mapping_mode)
    shape = (layout.with_row_ids, layout.lineage, layout.stored_lineage)
    return (id(spark), snapshot.table_root, shape, schema, table_layout, files)


_SCAN_CACHE = ScanCache()


def _empty(spark: SparkSession, layout: ScanLayout) -> DataFrame:
    fields = list(layout.schema.logical.fields)
    fields += [StructField(name, LongType(), True) for name in layout.lineage or ()]
    if layout.with_row_ids:
        fields += [
            StructField(layout.helpers.file_out, StringType(), False),
            StructField(layout.helpers.row_out, LongType(), False),
        ]
    return spark.createDataFrame([], StructType(fields))
