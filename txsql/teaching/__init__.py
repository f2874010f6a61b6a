"""Teaching tools, live on txsql: isolation anomalies and the write-conflict matrix.

* :mod:`txsql.teaching.anomalies`: Hermitage's interleavings (``anomaly_table``).
* :mod:`txsql.teaching.matrix`: every pair of writes raced from one snapshot
  (``conflict_matrix``), beside Databricks' documented outcome and Delta OSS's.
"""

from __future__ import annotations

from txsql.teaching.anomalies import (
    ANOMALIES,
    LEVELS,
    Anomaly,
    AnomalyTable,
    ScenarioError,
    anomaly_table,
    read_values,
    run_anomaly,
    try_commit,
    values_of,
)
from txsql.teaching.matrix import ConflictMatrix, conflict_matrix
from txsql.teaching.races import SETTINGS, STATEMENTS, Setting, Statement

__all__ = [
    "ANOMALIES",
    "LEVELS",
    "SETTINGS",
    "STATEMENTS",
    "Anomaly",
    "AnomalyTable",
    "ConflictMatrix",
    "ScenarioError",
    "Setting",
    "Statement",
    "anomaly_table",
    "conflict_matrix",
    "read_values",
    "run_anomaly",
    "try_commit",
    "values_of",
]
