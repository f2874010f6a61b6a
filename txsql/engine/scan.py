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

Round 3 (issue 10); the machine was again shared with other helpers' Spark jobs (load
average 11-25 on 2 cores), so seconds are inflated and noisy:

* Per-file constants as map literals instead of the broadcast join: a 1-row DELETE now runs
  exactly one Spark job (Spark's own status tracker agrees; before: two, the join's
  broadcast being the second), also on partitioned tables and after earlier DVs. Lookups
  in a literal map cost the same per query (0.04-0.05 s on 2M rows) with 32, 500 or 2000
  entries; parsing the map text is 0.05-0.3 s once per planned scan. With every row
  looking up a value (2M rows, key = id % n, sum of the value's length): 0.35 / 0.74 /
  1.11 / 0.23 s for 1 / 32 / 256 / 1024 entries (load average 17: noise, no growth with
  the map), so up to ``_LITERAL_FILES`` (2048) files the map is used.
* Spark lists more than 32 given paths with a parallel-listing job of its own; the paths
  are files the log names, so the scan raises that threshold while it reads (the driver
  stats them, milliseconds for thousands of local files): a DELETE touching 40 files ran
  two jobs, now one.
* Few deleted rows (<= ``_LITERAL_KEYS``, 1000) as a literal ``IN`` set: no broadcast, so
  no job. Building the filter: 0.16 s at 1000 keys, 0.35 s at 5000, 0.45 s at 20000 (once
  per planned scan); a count of 2M rows through it 0.19 s at 1000 keys, 0.63 s at 20000.
  ``TXSQL_BENCH_STRATEGIES=1 benchmarks/scan.py 1000000`` (1M rows, 32 files), warm
  count, literal vs anti-join: 1000 keys 0.20 vs 0.26 s, 5000 keys 0.23 vs 0.12 s, 20000
  keys 0.60 vs 0.24 s; hence the threshold of 1000. Rows per ``_file`` (a query that uses
  the constant), map literal vs join: 0.40 / 0.35 / 0.30 vs 0.33 / 0.67 / 0.31 s, i.e. no
  cost per query and one job fewer. At 2 % deleted of 1M rows the default scan was 1.8x
  (count) and 1.35x (sum) a plain scan.
* Rejected: the deleted rows as per-file bit sets in a literal, tested per row with
  ``get(array<bigint> words, row >> 6)``: 1.5 MB of SQL text for 5M rows, 10.8 s to plan
  and 2.7 s per count [plain 0.15]; the same with one binary literal per file (7 bits a
  byte, ``ascii(substring(bits, row / 7 + 1, 1))``): 0.5 s to plan but 3.1 s per count
  [plain 0.82]. Spark has no cheap scalar bit test on a binary.
* Dense hash keys (file ordinal instead of CRC) were not pursued: Spark's
  ``LongHashedRelation`` only switches to its dense array when the key range is below
  the number of keys (or 1024), i.e. nearly every row deleted.
* ``benchmarks/scan.py`` (5M rows, 32 files; the DV filter there is the anti-join, more
  than 1000 keys): 1 % deleted: count 1.05 [0.30] = 3.5x, sum 0.85 [0.26] = 3.3x;
  10 % deleted: count 4.00 [0.46] = 8.7x, sum 2.41 [0.28] = 8.5x; a second run: 1 %:
  count 1.55 [0.44] = 3.5x, sum 1.07 [0.37] = 2.9x; 10 %: count 1.35 [0.21] = 6.5x, sum
  2.20 [0.20] = 10.9x. Strategies in that run (1 %, 50k keys): count with the anti-join
  0.95 s vs a literal IN set 1.83 s (plus 4.3 s to plan it); rows per ``_file`` with the
  join 1.52 s vs map literals 2.46 s, but 2.68 s vs 1.52 s in a later run (2M rows,
  0.01 % deleted): no consistent difference under this load. The goal (<= 1.3x) is
  still not met for these fractions: the floor is the per-row work a plain count does not
  do at all (row index, key, probe) plus, at 10 %, the per-query broadcast of 500k keys.
  Next step: answer a bare ``count()`` from the log (numRecords minus DV cardinality) in
  the planner (done: ``SELECT COUNT(*)`` runs no job).

Round 4 (issue 10), idle machine, same table shape, best of 7 (plain scan in brackets):

* Reading ``row_index`` and computing the long key cost nothing measurable: count 0.21 s
  with the row index vs 0.21 s plain, a sum 0.23 vs 0.22 s with the key. The whole
  difference is the anti-join's probe (and, at 10 %, the broadcast job).
* Each file's deleted rows as a binary literal (``F.lit(bytes)``: one Py4J call a file, no
  SQL text), 7 rows a byte, looked up by ``element_at(create_map(crc, bits), key)`` and
  tested with ``ascii(cast(substring(bits, row / 7 + 1, 1) as string))`` plus a shift:
  count 0.32 / sum 0.32 s vs the anti-join's 0.28 / 0.31 at 1 % [0.08-0.17 / 0.13-0.16],
  0.35 / 0.36 vs 0.39 / 0.42 at 10 % [0.09 / 0.12]. One byte a row (``substring(bits,
  row + 1, 1) != X'01'``): 0.39 / 0.37 at 1 %. A ``CASE`` chain on the file key instead
  of the map: 0.85 s (Spark computes the CRC again in every branch). The lookup alone
  (``length(bits) > 0``) is 0.22 s, so a per-row bit test in Spark's expressions costs
  about what the probe does; kept the anti-join. Delta Spark tests the bit inside its
  Parquet reader (JVM code) and does not pay it.
"""

from __future__ import annotations

import contextlib
import io
import json
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
    is_present,
    raise_missing,
    read_files,
    resolve_path,
    row_id_columns,
)
from txsql.engine.schema import TableSchema, table_schema

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
    h = ScanHelpers.of(schema)
    if not snapshot.files:
        return _empty(spark, schema, with_row_ids, h)
    files = [ScanFile(f, resolve_path(snapshot.table_root, f.path)) for f in snapshot.files]
    key = _scan_key(spark, snapshot, with_row_ids)
    cached = _SCAN_CACHE.get(key)
    if cached is not None and cached.sparkSession is spark:
        # Planned before: only re-check that no data file vanished since (VACUUM, a manual
        # delete), which the planning below would have reported.
        raise_missing([f.local_path for f in files if not is_present(f.local_path)])
        return cached
    df = _plan_scan(spark, snapshot, schema, files, with_row_ids, h)
    _SCAN_CACHE.put(key, df)
    return df


def _plan_scan(
    spark: SparkSession,
    snapshot: Snapshot,
    schema: TableSchema,
    files: list[ScanFile],
    with_row_ids: bool,
    h: ScanHelpers,
) -> DataFrame:
    """The scan DataFrame: plain and DV files read, DVs applied, constants attached."""
    # Unpartitioned tables scanned without row ids need no per-file constant at all.
    constants = with_row_ids or bool(schema.partition_columns)
    plain = [f for f in files if f.add.deletion_vector is None]
    deleted = [f for f in files if f.add.deletion_vector is not None]
    parts = [(read_files(spark, schema, group), group) for group in (plain, deleted) if group]
    scanned = [f for _, group in parts for f in group]
    long_keys = len({f.crc for f in scanned}) == len(scanned)
    # Both sides of the union get the same helper columns (a row index read for nothing
    # costs nothing measurable, and Spark prunes it where no one uses it).
    key, row = constants or bool(deleted), with_row_ids or bool(deleted)
    frames = []
    for df, group in parts:
        df = with_helpers(df, schema, h, key=key, row=row, long_keys=long_keys)
        if group is deleted:
            df = dv_filter.drop_deleted(spark, df, group, snapshot.table_root, long_keys, h)
        frames.append(df)
    df = reduce(lambda a, b: a.unionByName(b), frames)
    lookups: dict[str, str] = {}
    if constants and uses_literals(scanned, long_keys):
        lookups = constant_lookups(schema, scanned, with_row_ids, h)
    elif constants:
        df = attach_constants(spark, df, schema, scanned, long_keys, with_row_ids, h)
    return select_output(df, schema, with_row_ids, h, lookups)


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


def _scan_key(spark: SparkSession, snapshot: Snapshot, with_row_ids: bool) -> tuple[Any, ...]:
    """What a scan's plan depends on: session, table root, schema and every file with its DV."""
    files = tuple(
        (f.path, f.dv_id, f.size, tuple(sorted(f.partition_values.items()))) for f in snapshot.files
    )
    schema = json.dumps(snapshot.schema_json, sort_keys=True)
    layout = (tuple(snapshot.partition_columns), snapshot.column_mapping_mode)
    return (id(spark), snapshot.table_root, with_row_ids, schema, layout, files)


_SCAN_CACHE = ScanCache()


def _empty(
    spark: SparkSession, schema: TableSchema, with_row_ids: bool, h: ScanHelpers
) -> DataFrame:
    fields = list(schema.logical.fields)
    if with_row_ids:
        fields += [
            StructField(h.file_out, StringType(), False),
            StructField(h.row_out, LongType(), False),
        ]
    return spark.createDataFrame([], StructType(fields))
