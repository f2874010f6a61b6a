"""The contents check of ``benchmarks/dml.py``: each table read by an independent reader.

DuckDB's ``delta_scan`` reads the txsql table and ``deltalake``'s ``QueryBuilder`` the
delta-rs one; ``count``, ``sum(id)``, ``sum(v)`` and ``min/max(s)`` per ``k`` must be equal.
Neither reader shares code with txsql.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

CHECK_SQL = (
    "SELECT {k}, count(*) AS n, sum(id) AS sid, sum(v) AS sv, min(s) AS smin, max(s) AS smax "
    "FROM {table} GROUP BY {k} ORDER BY {k}"
)


def duckdb_connection() -> Any:
    import glob

    import duckdb
    import duckdb_extension_delta

    base = os.path.dirname(duckdb_extension_delta.__file__)
    extension = sorted(glob.glob(os.path.join(base, "extensions", "v*", "delta.duckdb_extension")))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension[-1]}'")
    return con


def duckdb_contents(path: str, k: str) -> list[tuple[Any, ...]]:
    con = duckdb_connection()
    try:
        rows = con.execute(CHECK_SQL.format(k=k, table=f"delta_scan('{path}')")).fetchall()
        return [tuple(r) for r in rows]
    finally:
        con.close()


def deltalake_contents(path: str, k: str) -> list[tuple[Any, ...]]:
    result = pa.table(
        QueryBuilder()
        .register("t", DeltaTable(path))
        .execute(CHECK_SQL.format(k=k, table="t"))
        .read_all()
    )
    return list(zip(*(result.column(i).to_pylist() for i in range(result.num_columns))))


def check_contents(txsql_path: str, rs_path: str, k: str) -> str:
    """Whether DuckDB reading the txsql table and deltalake reading the delta-rs table
    give the same count and sums per ``k`` (or the first difference)."""
    ours, theirs = duckdb_contents(txsql_path, k), deltalake_contents(rs_path, k)
    if ours == theirs:
        n = sum(r[1] for r in ours)
        return f"contents match ({n:,} rows, {len(ours)} groups of {k})"
    for a, b in zip(ours, theirs):
        if a != b:
            return f"CONTENTS DIFFER: txsql {a} vs delta-rs {b}"
    return f"CONTENTS DIFFER: {len(ours)} vs {len(theirs)} groups"
