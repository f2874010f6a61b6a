"""Optimistic transactions: read sets, Delta Spark's conflict checker with row-level scoping.

Public entry points: :class:`txsql.txn.transaction.Transaction`,
:class:`txsql.txn.result.CommitResult` (also importable from ``transaction``),
:class:`txsql.txn.isolation.IsolationLevel` and :mod:`txsql.txn.conflicts.checker`.
"""
