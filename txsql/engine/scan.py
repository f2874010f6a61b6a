"""Snapshot -> Spark DataFrame: every active file, partition values, deletion vectors.

Only the DataFrame API is used (``spark.read``, ``createDataFrame``, ``mapInArrow``, joins),
so a scan works on classic PySpark and on Spark Connect alike.

How a scan is built:

* Data files are read by Spark's Parquet reader with the table's physical schema (files
  written before a column existed yield NULLs) and renamed to logical names.
* Per-file constants (partition values taken from the log, never from directory names, and
  the log path for ``_file``) come from a tiny per-file table joined by broadcast on a file
  key. The key is ``crc32(_metadata.file_path)``, a long, when the CRCs of the scanned files
  are distinct (checked on the driver), else the path string itself: a long key keeps the
  join on Spark's fast ``LongHashedRelation`` path.
* Deletion vectors: files without a DV are read by a plain scan; files with one are read
  with ``_metadata.row_index`` and anti-joined (broadcast) with their deleted rows, keyed by
  one long ``crc32(path) << 32 | row_index``. Up to ``_DRIVER_EXPANSION_ROWS`` deleted rows
  the driver reads the bitmaps itself (well under a millisecond per DV) and hands the keys
  to Spark as an Arrow table; above it a ``mapInArrow`` expands them on the executors (each
  task reads its DV files itself; nothing row-sized passes through the driver). The
  expanded keys are cached per (session, files, DV ids). The two scans are unioned.
* The planned DataFrame is cached per (session, table root, schema, files with their DVs):
  a notebook querying the same version again skips the file listing and per-file tables;
  only the data files' presence is re-checked (``os.path.isfile``).

Strategy measurements (``local[2]``, 5M rows (id, value, name) in 32 files, 1 % random
rows deleted in every file; warm best-of-5 seconds, the plain ``spark.read.parquet`` scan of
the same files in brackets; count / sum(value)):

* anti-join on (file_path string, row_index), DVs expanded per query:  1.2-1.5 / 1.2-1.3
  [0.18-0.22 / 0.30]
* anti-join on one long key ``crc32(path) << 32 | row_index``:  ~1.5 / ~1.4 uncached; the
  fixed cost of the Python stage expanding the DVs (0.4-0.6 s) dominates, so the expanded
  keys are cached per (session, files, DV ids): then 0.63 / 0.64 [0.22 / 0.29], i.e.
  2.9x / 2.2x, plus ~0.1 s to plan a scan (``inputFiles``, per-file tables)
* per-batch bitmap filtering in ``mapInArrow`` (all columns through Python): 10.3 / 6.8
* scalar pandas UDF filter on (file_path, row_index) (only those go through Python): 10.5 / 6.0

Round 2 (issue 10), same table shape; the machine was shared with ~8 other Spark jobs
(load average 9-35 on 2 cores), so absolute seconds are inflated and noisy, and only
ratios measured in one run mean much:

* ``NOT (key IN (...))`` as one filter (Spark's ``InSet``), the set written as SQL text:
  10.7 s only to parse and analyse 50k literals (a ``Column`` per literal from Python is a
  Py4J call each, slower still); rejected. Spark has no cheap way to ship a large literal
  set from Python, so the broadcast anti-join stays.
* ``_metadata.file_size`` instead of ``crc32(path)`` as the file key: computing the key
  over 2M rows 0.365 vs 0.374 s (no gain) and sizes collide (28 distinct in 31 files);
  rejected.
* The floor of any row-level DV filter: counting 2M rows with ``row_index`` in the scan
  costs 0.41 s vs 0.22 s for a plain count (which decodes no column at all), so count
  cannot reach 1.3x while the DVs are applied row by row; the anti-join adds ~0.15 s more.
* Expanding DVs on the driver instead of in a Python stage: first query of a version
  15.6 -> 5.9 s (2M rows, 31 files, 1 %, loaded machine); warm queries unchanged (1.03 /
  0.91 old, 1.10 / 0.74 new [0.42 / 0.75]). But a DataFrame made from driver data keeps
  the rows in its plan and every query re-analyses them: at 10 % (200k keys, 2M rows) warm
  count 1.70 s vs 0.90 s for executor expansion. Local-checkpointing the keys (the plan
  keeps only a reference) removed that gap (2.01 vs 2.02 s in a noisier run), so
  driver-built keys are checkpointed, and above ``_DRIVER_EXPANSION_ROWS`` (1M) the
  executors expand.
* Planning a scan cost 0.6-1.7 s under that load (``spark.read`` listing, ``inputFiles``,
  per-file tables); the plan cache makes it ~0 for a repeated version.
* ``benchmarks/scan.py`` end to end (5M rows, 32 files, loaded machine; run A without the
  checkpoint, run B final; the plain scan itself moved 2x between runs): 1 % deleted:
  count 0.93 / 2.36 [0.37 / 0.72] = 2.5x / 3.3x, sum 1.12 / 1.89 [0.31 / 0.42] = 3.7x /
  4.6x; 10 % deleted: count 2.64 / 1.59 [0.19 / 0.22] = 14x / 7.2x, sum 2.19 / 1.48
  [0.37 / 0.27] = 5.9x / 5.4x. The goal (<= 1.3x) is not met. At 10 % the per-query
  broadcast of 500k keys (read from the cache, build the hash relation, ship it)
  dominates. Next steps: compact per-file keys (file ordinal * rows + row_index) so the
  hash relation can use its dense array mode for dense deletes, and answering a bare
  ``count()`` from the log (numRecords minus DV cardinality) in the planner.

The long-key anti-join with cached keys is the default; DV-free files skip it entirely (plain
scan unioned in). The remaining gap is per-row work (row index, key, hash probe) that a
plain count does not do at all. ``benchmarks/scan.py`` prints the end-to-end numbers.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.dv.store import read_deletion_vector
from txsql.engine.failures import typed_engine_error
from txsql.engine.names import fresh_names
from txsql.engine.scan_cache import DeletedRowsCache, ScanCache
from txsql.engine.schema import TableSchema, quote, table_schema
from txsql.errors import DataFileError, TxSqlError
from txsql.log.actions import AddFile
from txsql.storage.factory import file_io_for, spark_uri
from txsql.storage.paths import is_local_location, resolve_in_root

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from txsql.log.snapshot import Snapshot

FILE_COLUMN = "_file"
ROW_INDEX_COLUMN = "_row_index"
# Spark's hidden per-file struct; a data column of the same name shadows it for F.col, so
# it is always reached through DataFrame.metadataColumn.
_METADATA = "_metadata"


@dataclass(frozen=True)
class _Helpers:
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

    @staticmethod
    def of(schema: TableSchema) -> _Helpers:
        taken = [c.logical_name for c in schema.columns] + [c.physical_name for c in schema.columns]
        file_out, row_out = row_id_columns(c.logical_name for c in schema.columns)
        taken += [file_out, row_out]
        bases = ["_txsql_fk", "_txsql_ri", "_txsql_dk", "_txsql_dp", "_txsql_dr"]
        bases += ["_txsql_ck", "_txsql_file"]
        bases += [f"_txsql_p{i}" for i in range(len(schema.partition_columns))]
        names = fresh_names(bases, taken)
        key, row, dv_key, dv_path, dv_row, info_key, info_file = names[:7]
        return _Helpers(
            key,
            row,
            dv_key,
            dv_path,
            dv_row,
            info_key,
            info_file,
            tuple(names[7:]),
            file_out,
            row_out,
        )


def row_id_columns(column_names: Iterable[str]) -> tuple[str, str]:
    """Names of the hidden file and row-index columns of a scan of a table with these columns.

    ``_file`` and ``_row_index`` unless the table has columns of those names: the user's
    columns win and the hidden ones get a suffix (``_file_1``...).
    """
    file_out, row_out = fresh_names([FILE_COLUMN, ROW_INDEX_COLUMN], column_names)
    return file_out, row_out


def snapshot_row_ids(snapshot: Snapshot) -> tuple[str, str]:
    """:func:`row_id_columns` for a snapshot's schema."""
    return row_id_columns(f["name"] for f in snapshot.schema_json.get("fields", []))


_GLOB_CHARS = "\\{}[]*?"
# DV files per expansion task: enough to amortise a Python task, few enough to parallelise.
_DVS_PER_TASK = 32
# Deleted rows up to which the driver expands DVs itself (8 bytes each, for one moment):
# beyond it the expansion runs on the executors, so driver memory stays bounded.
_DRIVER_EXPANSION_ROWS = 1_000_000


@dataclass(frozen=True)
class _ScanFile:
    add: AddFile
    local_path: str
    spark_path: str = ""  # _metadata.file_path as Spark reports it


def scan_snapshot(
    spark: SparkSession, snapshot: Snapshot, *, with_row_ids: bool = False
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
    h = _Helpers.of(schema)
    if not snapshot.files:
        return _empty(spark, schema, with_row_ids, h)
    files = [_ScanFile(f, resolve_path(snapshot.table_root, f.path)) for f in snapshot.files]
    key = _scan_key(spark, snapshot, with_row_ids)
    cached = _SCAN_CACHE.get(key)
    if cached is not None and cached.sparkSession is spark:
        # Planned before: only re-check that no data file vanished since (VACUUM, a manual
        # delete), which the planning below would have reported.
        _raise_missing([f.local_path for f in files if not _present(f.local_path)])
        return cached
    df = _plan_scan(spark, snapshot, schema, files, with_row_ids, h)
    _SCAN_CACHE.put(key, df)
    return df


def _plan_scan(
    spark: SparkSession,
    snapshot: Snapshot,
    schema: TableSchema,
    files: list[_ScanFile],
    with_row_ids: bool,
    h: _Helpers,
) -> DataFrame:
    """The scan DataFrame: plain and DV files read, DVs applied, constants joined."""
    constants = with_row_ids or bool(schema.partition_columns)
    plain = [f for f in files if f.add.deletion_vector is None]
    deleted = [f for f in files if f.add.deletion_vector is not None]
    parts: list[tuple[DataFrame, list[_ScanFile]]] = []
    for group in (plain, deleted):
        if group:
            parts.append((_read(spark, schema, group), group))
    scanned = [f for _, group in parts for f in group]
    crcs = [zlib.crc32(f.spark_path.encode("utf-8")) for f in scanned]
    long_keys = len(set(crcs)) == len(crcs)
    frames = []
    for df, group in parts:
        has_dvs = group[0].add.deletion_vector is not None
        if constants or has_dvs:
            df = df.withColumn(h.key, _file_key(_meta(df, "file_path"), long_keys))
        if with_row_ids or has_dvs:
            df = df.withColumn(h.row, _meta(df, "row_index"))
        if has_dvs:
            df = _drop_deleted(spark, df, group, snapshot.table_root, long_keys, h)
            # The plain scan lacks the helper columns the DV filter needed; align both sides.
            df = df.drop(*([] if constants else [h.key]), *([] if with_row_ids else [h.row]))
        frames.append(df)
    df = reduce(lambda a, b: a.unionByName(b), frames)
    if constants:
        df = _join_constants(spark, df, schema, scanned, long_keys, with_row_ids, h)
    return df.select(_output_columns(schema, with_row_ids, h))


def _scan_key(spark: SparkSession, snapshot: Snapshot, with_row_ids: bool) -> tuple[Any, ...]:
    """What a scan's plan depends on: session, table root, schema and every file with its DV."""
    files = tuple(
        (f.path, f.dv_id, f.size, tuple(sorted(f.partition_values.items()))) for f in snapshot.files
    )
    schema = json.dumps(snapshot.schema_json, sort_keys=True)
    layout = (tuple(snapshot.partition_columns), snapshot.column_mapping_mode)
    return (id(spark), snapshot.table_root, with_row_ids, schema, layout, files)


_SCAN_CACHE = ScanCache()


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


def _meta(df: DataFrame, field: str) -> Column:
    # Not F.col("_metadata.x"): a data column named _metadata would shadow Spark's struct.
    return df.metadataColumn(_METADATA).getField(field)


def _file_key(path: Column, long_keys: bool) -> Column:
    return F.crc32(path.cast("binary")) if long_keys else path


def _read(spark: SparkSession, schema: TableSchema, files: list[_ScanFile]) -> DataFrame:
    """One Parquet scan over ``files``; fills in each file's ``spark_path``."""
    paths = [_escape_glob(f.local_path) for f in files]
    df = spark.read.schema(schema.physical_read_schema()).parquet(*paths)
    seen: dict[str, str] = {}
    for uri in df.inputFiles():
        if not uri.startswith("file:"):  # an object store: keyed by the unquoted URI
            seen[unquote(uri)] = uri
            continue
        # inputFiles() says file:///x where _metadata.file_path says file:/x.
        spark_path = "file:/" + uri[len("file:") :].lstrip("/")
        seen[os.path.normpath(unquote(urlparse(spark_path).path))] = spark_path
    _raise_missing([f.local_path for f in files if f.local_path not in seen])
    for i, f in enumerate(files):
        files[i] = _ScanFile(f.add, f.local_path, seen[f.local_path])
    return df


def _present(path: str) -> bool:
    # Object stores: Spark's read reports a missing file; a HEAD per file would cost more.
    return os.path.isfile(path) if "://" not in path else True


def _raise_missing(missing: list[str]) -> None:
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


def _drop_deleted(
    spark: SparkSession,
    df: DataFrame,
    files: list[_ScanFile],
    root: str,
    long_keys: bool,
    h: _Helpers,
) -> DataFrame:
    """Anti-join ``df`` with the deleted rows of ``files``, expanded on the executors."""
    names = (h.dv_key, h.dv_path, h.dv_row)
    cache_key = (
        id(spark),
        root,
        long_keys,
        names,
        tuple((f.spark_path, f.add.dv_id) for f in files),
    )
    rows = _DV_CACHE.get(cache_key)
    cardinality = sum(_dv(f).cardinality for f in files)
    if rows is None and cardinality <= _DRIVER_EXPANSION_ROWS:
        table = _expand_on_driver(files, root, long_keys, names)
        # Checkpointed: a DataFrame made from local data carries the rows in its plan, and
        # every later query would re-analyse them (1.7 vs 0.9 s at 200k keys).
        local = spark.createDataFrame(table).localCheckpoint(eager=True)
        rows = _DV_CACHE.put(cache_key, local, cardinality)
    if rows is None:
        source = spark.createDataFrame(_descriptor_table(files))
        tasks = min(len(files) // _DVS_PER_TASK + 1, 64)
        if tasks > 1:
            source = source.repartition(tasks)
        if long_keys:
            out = StructType([StructField(h.dv_key, LongType(), False)])
        else:
            out = StructType(
                [
                    StructField(h.dv_path, StringType(), False),
                    StructField(h.dv_row, LongType(), False),
                ]
            )
        rows = source.mapInArrow(_expander(root, long_keys, names), out)
        rows = _DV_CACHE.put(cache_key, rows, cardinality)
        if _DV_CACHE.get(cache_key) is rows:
            _expand_now(rows, cache_key)
    if long_keys:
        return df.join(F.broadcast(rows), F.col(h.dv_key) == _row_key(h), "left_anti")
    cond = (F.col(h.key) == F.col(h.dv_path)) & (F.col(h.row) == F.col(h.dv_row))
    return df.join(F.broadcast(rows), cond, "left_anti")


_DV_CACHE = DeletedRowsCache()


def _expand_now(rows: DataFrame, cache_key: tuple[Any, ...]) -> None:
    """Fill the cache entry now, so a damaged DV file fails the statement with a typed error.

    Left lazy, the expansion would run inside the user's first action on the result and
    surface as a raw worker exception there. The broadcast anti-join needs every deleted
    row anyway, so expanding now adds one small job, no extra reading.
    """
    try:
        rows.count()
    except Exception as e:
        _DV_CACHE.discard(cache_key)
        typed = typed_engine_error(e)
        if typed is None:
            raise
        raise typed from None


def _descriptor_table(files: Sequence[_ScanFile]) -> pa.Table:
    """The DV descriptors of ``files`` as rows, the input of the executor expansion."""
    return pa.table(
        {
            "path": [f.spark_path for f in files],
            "storage_type": [_dv(f).storage_type for f in files],
            "dv": [_dv(f).path_or_inline_dv for f in files],
            "offset": pa.array(
                [_dv(f).offset for f in files],
                pa.int32(),
            ),
            "size": pa.array(
                [_dv(f).size_in_bytes for f in files],
                pa.int32(),
            ),
            "cardinality": pa.array(
                [_dv(f).cardinality for f in files],
                pa.int64(),
            ),
        }
    )


def _expand_on_driver(
    files: Sequence[_ScanFile], root: str, long_keys: bool, names: tuple[str, str, str]
) -> pa.Table:
    """The deleted-row keys of ``files`` as an Arrow table, read by the driver itself.

    Below ``_DRIVER_EXPANSION_ROWS`` deleted rows this beats the executor expansion by the
    whole Python stage (a Spark job with Python workers, 0.4-0.6 s on ``local[2]``): the
    bitmaps are small and read in well under a millisecond each. A damaged DV raises its
    typed error here, before any Spark job starts.
    """
    fs = file_io_for(root)
    dv_key, dv_path, dv_row = names
    chunks: list[np.ndarray] = []
    paths: list[str] = []
    for f in files:
        rows = np.asarray(read_deletion_vector(_dv(f), root, fs).to_array(), dtype=np.int64)
        if long_keys:
            crc = np.int64(zlib.crc32(f.spark_path.encode("utf-8")))
            rows = np.left_shift(crc, np.int64(32)) | rows
        else:
            paths += [f.spark_path] * len(rows)
        chunks.append(rows)
    keys = pa.array(np.concatenate(chunks) if chunks else np.empty(0, np.int64), pa.int64())
    if long_keys:
        return pa.table({dv_key: keys})
    return pa.table({dv_path: pa.array(paths, pa.string()), dv_row: keys})


def _dv(f: _ScanFile) -> DeletionVectorDescriptor:
    assert f.add.deletion_vector is not None  # only files with DVs reach the DV filter
    return f.add.deletion_vector


def _row_key(h: _Helpers) -> Column:
    # crc32 < 2**32 and row indexes < 2**32, so (crc << 32) | row is injective.
    return F.shiftleft(F.col(h.key), 32).bitwiseOR(F.col(h.row))


def _expander(
    root: str, long_keys: bool, names: tuple[str, str, str]
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function turning DV descriptors into deleted-row keys (executor side).

    The FileIO travels in the closure: an object-store one pickles as its settings and
    reconnects on the executor, which never touches the driver's disk.
    """
    fs = file_io_for(root)

    def expand(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        from txsql.dv.descriptor import DeletionVectorDescriptor
        from txsql.dv.store import read_deletion_vector

        dv_key, dv_path, dv_row = names
        for batch in batches:
            cols = batch.to_pydict()
            for i in range(batch.num_rows):
                descriptor = DeletionVectorDescriptor(
                    cols["storage_type"][i],
                    cols["dv"][i],
                    cols["size"][i],
                    cols["cardinality"][i],
                    cols["offset"][i],
                )
                rows = np.asarray(
                    read_deletion_vector(descriptor, root, fs).to_array(), dtype=np.int64
                )
                path = cols["path"][i]
                if long_keys:
                    crc = np.int64(zlib.crc32(path.encode("utf-8")))
                    keys = np.left_shift(crc, np.int64(32)) | rows
                    yield pa.RecordBatch.from_arrays([pa.array(keys)], names=[dv_key])
                else:
                    paths = pa.array([path] * len(rows), pa.string())
                    yield pa.RecordBatch.from_arrays(
                        [paths, pa.array(rows)], names=[dv_path, dv_row]
                    )

    return expand


def _join_constants(
    spark: SparkSession,
    df: DataFrame,
    schema: TableSchema,
    files: Sequence[_ScanFile],
    long_keys: bool,
    with_row_ids: bool,
    h: _Helpers,
) -> DataFrame:
    """Attach partition values (typed, from the log) and ``_file`` by a broadcast join."""
    table: dict[str, pa.Array] = {}
    if long_keys:
        crcs = [zlib.crc32(f.spark_path.encode("utf-8")) for f in files]
        table[h.info_key] = pa.array(crcs, pa.int64())
    else:
        table[h.info_key] = pa.array([f.spark_path for f in files], pa.string())
    table[h.info_file] = pa.array([f.add.path for f in files], pa.string())
    for i, column in enumerate(schema.partition_columns):
        values = [_partition_text(f.add, column.physical_name) for f in files]
        table[h.parts[i]] = pa.array(values, pa.string())
    info = spark.createDataFrame(pa.table(table))
    typed = [F.col(h.info_key), F.col(h.info_file)] + [
        F.col(h.parts[i]).cast(c.logical_type).alias(h.parts[i])
        for i, c in enumerate(schema.partition_columns)
    ]
    info = info.select(typed)
    if not with_row_ids:
        info = info.drop(h.info_file)
    joined = df.join(F.broadcast(info), F.col(h.key) == F.col(h.info_key), "inner")
    return joined.drop(h.info_key)


def _partition_text(add: AddFile, physical_name: str) -> str | None:
    values = add.partition_values
    if physical_name in values:
        text = values[physical_name]
    else:
        lowered = {k.lower(): v for k, v in values.items()}
        text = lowered.get(physical_name.lower())
    # Protocol: an empty string, like a JSON null, is a NULL partition value.
    return text if text else None


def _output_columns(schema: TableSchema, with_row_ids: bool, h: _Helpers) -> list[Column]:
    out: list[Column] = []
    partitions = {c.logical_name: i for i, c in enumerate(schema.partition_columns)}
    for column in schema.columns:
        if column.is_partition:
            index = partitions[column.logical_name]
            out.append(F.col(h.parts[index]).alias(column.logical_name))
        else:
            out.append(schema.logical_data_column(column, F.col(quote(column.physical_name))))
    if with_row_ids:
        out += [F.col(h.info_file).alias(h.file_out), F.col(h.row).alias(h.row_out)]
    return out


def _empty(spark: SparkSession, schema: TableSchema, with_row_ids: bool, h: _Helpers) -> DataFrame:
    fields = list(schema.logical.fields)
    if with_row_ids:
        fields += [
            StructField(h.file_out, StringType(), False),
            StructField(h.row_out, LongType(), False),
        ]
    return spark.createDataFrame([], StructType(fields))
