"""Spark SQL over DataFrames without leaving anything in Spark's catalog.

A statement's txsql tables become placeholder table names in its SQL, each bound to the
DataFrame that scans the snapshot read. PySpark binds DataFrames passed to ``spark.sql`` as
keyword arguments: classic Spark registers a view only while it analyzes the query and drops
it before returning; Spark Connect sends the plans along with the query. Either way a long
session's catalog does not grow with every SELECT (it did when each read left a temp view).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from txsql.planner.sql.dialect import SPARK

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PREFIX = "txsql_frame_"
_PLACEHOLDER = re.compile(r"`?(" + _PREFIX + r"[0-9a-f]{16})`?")


@dataclass
class Frames:
    """The DataFrames one statement's SQL refers to, by placeholder name."""

    by_name: dict[str, DataFrame] = field(default_factory=dict)

    def bind(self, frame: DataFrame, alias: str | None) -> exp.Table:
        """A table node standing for ``frame`` in the SQL, aliased as ``alias``."""
        name = f"{_PREFIX}{uuid.uuid4().hex[:16]}"
        self.by_name[name] = frame
        table = exp.to_table(name)
        if alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        return table

    def sql(self, spark: SparkSession, query: exp.Expr, *, prefix: str = "") -> DataFrame:
        """Run ``prefix`` + ``query`` (e.g. ``EXPLAIN``) with every placeholder bound."""
        # The text goes through str.format: escape the query's own braces (string literals,
        # lambda syntax), then turn each placeholder into a format field.
        raw = prefix + query.sql(SPARK)
        text = raw.replace("{", "{{").replace("}", "}}")
        used: dict[str, Any] = {}

        def field_for(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.by_name:
                return match.group(0)
            used[name] = self.by_name[name]
            return "{" + name + "}"

        text = _PLACEHOLDER.sub(field_for, text)
        if not used:
            return spark.sql(raw)
        return spark.sql(text, **used)
