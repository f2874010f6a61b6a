"""Creating or adopting the SparkSession txsql runs on."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Settings txsql needs on any session: micro-second timestamps in Parquet (INT96 has no
# statistics and is deprecated in Delta) and the Parquet row index for deletion vectors.
REQUIRED_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(master: str = "local[*]", app_name: str = "txsql") -> SparkSession:
    """Start (or reuse) a quiet local SparkSession suitable for notebooks and tests."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", os.environ.get("TXSQL_DRIVER_MEMORY", "2g"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in REQUIRED_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")  # local sessions only; never on Spark Connect
    return spark


def prepare_session(spark: SparkSession) -> SparkSession:
    """Apply txsql's required settings to a session the user gave us (works on Connect)."""
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    return spark


def _python() -> str:
    import sys

    return sys.executable
