"""Independent Delta readers used as oracles: DuckDB's delta extension and deltalake."""

from __future__ import annotations

import glob
import os
from typing import Any

import duckdb
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    import duckdb_extension_delta

    base = os.path.dirname(duckdb_extension_delta.__file__)
    extension = sorted(glob.glob(os.path.join(base, "extensions", "v*", "delta.duckdb_extension")))
    assert extension, f"no delta extension file under {base}"
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension[-1]}'")
    return con


def duckdb_rows(path: str, version: int, columns: str) -> list[tuple[Any, ...]]:
    con = duckdb_connection()
    try:
        return _sorted(
            con.execute(
                f"SELECT {columns} FROM delta_scan('{path}', version => {version})"
            ).fetchall()
        )
    finally:
        con.close()


def deltalake_rows(path: str, version: int, columns: str) -> list[tuple[Any, ...]]:
    table = DeltaTable(path, version=version)
    result = pa.table(
        QueryBuilder().register("t", table).execute(f"SELECT {columns} FROM t").read_all()
    )
    return _sorted(list(zip(*(result.column(i).to_pylist() for i in range(result.num_columns)))))


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows in their natural order; by their text where NULLs make values incomparable."""
    try:
        return sorted(rows)
    except TypeError:
        return sorted(rows, key=repr)
