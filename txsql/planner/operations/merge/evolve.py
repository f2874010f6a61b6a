"""MERGE schema evolution: source columns the target lacks become target columns.

Delta's rule (``MERGE WITH SCHEMA EVOLUTION INTO`` or the session conf
``spark.databricks.delta.schema.autoMerge.enabled = true``): when a clause is
``UPDATE SET *`` or ``INSERT *``, every top-level source column missing in the target
(names compared case-insensitively) is appended to the target schema, nullable, with the
source's type; old rows read NULL for it. The new schema is one ``metaData`` action in
the MERGE's own commit, so the rows and the schema change land together or not at all.
Without evolution (or without a ``*`` clause) no column is added. The same switch lets a
wider source type widen a column (:mod:`txsql.planner.operations.widening`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from txsql.log.actions import Metadata
from txsql.planner.operations.widening import AUTO_MERGE_CONF, auto_merge
from txsql.planner.sql.statements import Merge

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from txsql.log.snapshot import Snapshot


def evolution_enabled(spark: SparkSession, statement: Merge) -> bool:
    """WITH SCHEMA EVOLUTION, or the session's autoMerge conf set to true."""
    return statement.schema_evolution or auto_merge(spark)


def evolved_metadata(
    evolution: bool, statement: Merge, snapshot: Snapshot, source: DataFrame
) -> Metadata | None:
    """The target's metadata with the source's extra columns, or None (no change or
    ``evolution`` off: see :func:`evolution_enabled`)."""
    if not evolution:
        return None
    if not any(c.action in ("update", "insert") and c.values is None for c in statement.clauses):
        return None  # only UPDATE SET * / INSERT * bring source columns along
    schema: dict[str, Any] = json.loads(snapshot.metadata.schema_string)
    existing = {f["name"].lower() for f in schema["fields"]}
    added: list[dict[str, Any]] = []
    for field in source.schema.jsonValue()["fields"]:
        if field["name"].lower() in existing:
            continue
        existing.add(field["name"].lower())
        added.append({**field, "nullable": True, "metadata": {}})
    if not added:
        return None
    schema["fields"] = [*schema["fields"], *added]
    return replace(snapshot.metadata, schema_string=json.dumps(schema, separators=(",", ":")))


__all__ = ["AUTO_MERGE_CONF", "evolution_enabled", "evolved_metadata"]
