"""What every statement runner needs: the Spark session, the catalog and options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from txsql.planner.catalog import Catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class RunContext:
    spark: SparkSession
    catalog: Catalog
    max_commit_attempts: int = 10_000
