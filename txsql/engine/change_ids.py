"""Stable row ids in the change data feed of a table that tracks rows.

On a table with ``delta.enableRowTracking`` every change row names its row:
``_row_id`` (the row's stable id; an update's preimage and postimage share it) and
``_row_commit_version`` (the version that last wrote that image of the row: for a
preimage or a deleted row the commit before, for a postimage or an insert the change's
own version).

Where the ids come from (PROTOCOL.md "Row Tracking"; the reader rule is the scan's,
:func:`~txsql.engine.scan.scan_snapshot` with lineage):

* Changes derived from ``add``/``remove`` actions: the rows are read from data files, so
  their ids are the materialized column or ``baseRowId`` + row index, like any scan.
* Change files (``_change_data/``): Delta Spark reads no ids from them, so txsql's DML
  writes each change row's id and commit version into the table's materialized columns
  of the change file, as a copied row carries them in a data file (readers that do not
  know them read the schema's columns only). An inserted row has no id yet when its
  change file is written: ids are assigned at each commit attempt. Its id is its data
  file's ``baseRowId`` + row index, so an insert without a stored id is paired with a
  fresh row (no stored id) of the same values among the files the commit added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from txsql.engine.names import fresh_names
from txsql.engine.scan import scan_snapshot, snapshot_row_ids
from txsql.engine.schema import quote
from txsql.log import row_tracking
from txsql.log.actions import AddFile, RemoveFile

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from txsql.log.snapshot import Snapshot

ROW_ID = "_row_id"
ROW_COMMIT_VERSION = "_row_commit_version"
Lineage = tuple[str, str]  # the table's materialized (row id, row commit version) columns


def lineage_of(snapshot: Snapshot) -> Lineage | None:
    """The materialized columns change rows carry their ids in (None: rows untracked)."""
    return row_tracking.materialized_columns(snapshot.configuration)


def scan_rows(spark: SparkSession, snapshot: Snapshot, *, lineage: bool) -> DataFrame:
    """The live rows of ``snapshot``; with ``lineage`` on a table tracking rows, then each
    row's resolved stable id and commit version (materialized columns' names)."""
    if not lineage or lineage_of(snapshot) is None:
        return scan_snapshot(spark, snapshot)
    scan = scan_snapshot(spark, snapshot, with_row_ids=True, with_lineage=True)
    return scan.drop(*snapshot_row_ids(snapshot))


def expose(df: DataFrame, lineage: Lineage | None, version: int) -> DataFrame:
    """``df`` with its materialized columns as ``_row_id`` and ``_row_commit_version``,
    last; an image without a stored version (a postimage) was written at ``version``."""
    if lineage is None:
        return df
    row_id, commit_version = lineage
    ids = F.col(quote(row_id)).alias(ROW_ID)
    versions = F.coalesce(F.col(quote(commit_version)), F.lit(version).cast("long"))
    rest = [F.col(quote(c)) for c in df.columns if c not in lineage]
    return df.select(*rest, ids, versions.alias(ROW_COMMIT_VERSION))


def resolve_inserts(
    spark: SparkSession,
    snapshot: Snapshot,
    rows: DataFrame,
    actions: Sequence[object],
    change_type: str,
    insert: str,
) -> DataFrame:
    """``rows`` (a commit's change-file rows, with the materialized columns) with an id
    for every insert that has none: that of a fresh row of the same values in the files
    the commit added (see the module docstring). Pairs are made within groups of equal
    values, so equal rows may swap ids, which no reader can tell apart."""
    lineage = lineage_of(snapshot)
    if lineage is None:
        return rows
    removed = {a.path for a in actions if isinstance(a, RemoveFile)}
    # The new rows of a commit live in the files it added at new paths; a DV the commit
    # set there (a row inserted and deleted in one transaction) does not unmake the insert.
    added = [
        replace(a, deletion_vector=None)
        for a in actions
        if isinstance(a, AddFile) and a.data_change and a.path not in removed
    ]
    if not added:
        return rows
    pending = (F.col(change_type) == F.lit(insert)) & F.col(quote(lineage[0])).isNull()
    columns = [c for c in rows.columns if c not in (change_type, *lineage)]
    fresh = _fresh_rows(spark, snapshot, added, columns)
    key, rank = fresh_names(["_cdf_key", "_cdf_rank"], rows.columns)
    waiting = _ranked(rows.where(pending).drop(*lineage), columns, key, rank)
    ranked = _ranked(fresh, columns, key, rank).select(key, rank, *[quote(c) for c in lineage])
    paired = waiting.join(ranked, [key, rank], "left")
    resolved = paired.select(*[quote(c) for c in rows.columns])
    return rows.where(~pending).unionByName(resolved)


def _fresh_rows(
    spark: SparkSession, snapshot: Snapshot, added: Sequence[AddFile], columns: Sequence[str]
) -> DataFrame:
    """Every physical row of ``added`` that stores no id, with its fresh id and version."""
    lineage = lineage_of(snapshot)
    assert lineage is not None
    row_id, commit_version = lineage
    scanned = replace(snapshot, files=tuple(added))
    scan = scan_snapshot(spark, scanned, with_row_ids=True, with_lineage=True, stored_lineage=True)
    file_column, row_column = snapshot_row_ids(scanned)
    path, base, version = fresh_names(["_cdf_path", "_cdf_base", "_cdf_version"], scan.columns)
    bases = spark.createDataFrame(
        [(a.path, a.base_row_id, a.default_row_commit_version) for a in added],
        f"{quote(path)} STRING, {quote(base)} BIGINT, {quote(version)} BIGINT",
    )
    # A row's fresh id: its file's baseRowId + its position (PROTOCOL.md "Row Tracking").
    joined = scan.where(F.col(quote(row_id)).isNull()).join(
        F.broadcast(bases), F.col(quote(file_column)) == F.col(quote(path)), "left"
    )
    return joined.select(
        *[F.col(quote(c)) for c in columns],
        (F.col(quote(base)) + F.col(quote(row_column))).alias(row_id),
        F.col(quote(version)).alias(commit_version),
    )


def _ranked(df: DataFrame, columns: Sequence[str], key: str, rank: str) -> DataFrame:
    """``df`` plus a key of its values (JSON, so every column type compares) and the row's
    rank among rows of the same key."""
    values: Column = F.to_json(F.struct(*[F.col(quote(c)) for c in columns]))
    keyed = df.withColumn(key, values)
    order = Window.partitionBy(key).orderBy(F.lit(1))
    return keyed.withColumn(rank, F.row_number().over(order))
