"""The ``txsql`` sqlglot dialect: Databricks SQL plus what it lacks.

The class name is unique on purpose: sqlglot registers dialects by lowercased class name,
so naming it ``Databricks`` would replace the built-in dialect process-wide.
"""

from __future__ import annotations

from sqlglot.dialects.databricks import Databricks


class TxSql(Databricks):
    """Databricks SQL as txsql reads it (later issues add RESTORE, VACUUM, ...)."""


DIALECT = "txsql"
SPARK = "spark"
