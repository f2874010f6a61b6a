"""``_metadata.row_id`` and ``_metadata.row_commit_version`` in queries on tables that keep
stable row ids (``delta.enableRowTracking``), as Delta Spark exposes them.

A txsql table reaches Spark as a DataFrame over its snapshot, not as a file source, so
Spark's own hidden ``_metadata`` struct is not there. When a query names one of the two
fields, each such table is bound with a ``_metadata`` struct column holding them (the
stable values, see ``scan_snapshot(with_lineage=True)``), and every ``*`` over the table
becomes ``* EXCEPT (_metadata)``, so the struct shows only where the query asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from sqlglot import exp

from txsql.engine.scan import scan_snapshot
from txsql.engine.schema import quote
from txsql.errors import UnsupportedFeatureError
from txsql.log import row_tracking
from txsql.log.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

METADATA = "_metadata"
FIELDS = ("row_id", "row_commit_version")


def wanted(query: exp.Expr) -> bool:
    """Whether ``query`` names ``_metadata.row_id`` or ``_metadata.row_commit_version``."""
    return any(
        column.table.lower() == METADATA and column.name.lower() in FIELDS
        for column in query.find_all(exp.Column)
    )


def lineage_frame(spark: SparkSession, snapshot: Snapshot) -> DataFrame | None:
    """The snapshot's rows with a ``_metadata`` struct of their stable ids; None when the
    table keeps none (or has a column of that name, which wins)."""
    names = row_tracking.materialized_columns(snapshot.configuration)
    columns = [f["name"] for f in snapshot.schema_json.get("fields", [])]
    if names is None or any(c.lower() == METADATA for c in columns):
        return None
    df = scan_snapshot(spark, snapshot, with_row_ids=True, with_lineage=True)
    row_id, version = names
    struct = F.struct(
        F.col(quote(row_id)).alias("row_id"), F.col(quote(version)).alias("row_commit_version")
    )
    return df.select(*[F.col(quote(c)) for c in columns], struct.alias(METADATA))


def hide_from_stars(query: exp.Expr, tables: list[exp.Table]) -> None:
    """``*`` (and ``t.*``) over the ``tables`` bound with ``_metadata`` leave it out."""
    placeholders = {id(t) for t in tables}
    aliases = {t.alias_or_name.lower() for t in tables}
    for select in query.find_all(exp.Select):
        sources = [select.args.get("from_") or select.args.get("from")]
        sources += select.args.get("joins") or []
        direct = [s.this for s in sources if s is not None]
        if not any(id(t) in placeholders for t in direct):
            continue
        for projection in select.expressions:
            star = projection if isinstance(projection, exp.Star) else None
            if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
                star = projection.this if projection.table.lower() in aliases else None
            if star is not None:
                hidden = list(star.args.get("except_") or [])
                star.set("except_", [*hidden, exp.column(METADATA)])


def refuse_missing(display: list[str]) -> None:
    """``_metadata.row_id`` named but no table of the query keeps row ids."""
    raise UnsupportedFeatureError(
        f"_metadata.row_id and _metadata.row_commit_version need row tracking, which "
        f"{', '.join(display) or 'the table'} does not keep",
        hint="Turn it on: ALTER TABLE <table> SET TBLPROPERTIES "
        "('delta.enableRowTracking' = 'true') (existing rows get their ids then).",
    )
