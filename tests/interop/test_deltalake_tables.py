"""Tables the deltalake package creates, written by txsql.

deltalake 1.6.6 lists ``variantType`` in the protocol of every deletion-vector table it
creates, even without a VARIANT column: such a table must take every statement like any
other. DuckDB and deltalake, which share no code with txsql, read each version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import UnsupportedFeatureError

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def test_a_deltalake_dv_table_listing_variant_type_is_written(spark: Any, tmp_path: Path) -> None:
    location = str(tmp_path / "dl")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"])})
    write_deltalake(location, rows, configuration={"delta.enableDeletionVectors": "true"})
    assert "variantType" in (DeltaTable(location).protocol().writer_features or [])
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    t = f"delta.`{location}`"
    for statement in (
        f"INSERT INTO {t} VALUES (4, 'd')",
        f"UPDATE {t} SET v = 'B' WHERE id = 2",
        f"DELETE FROM {t} WHERE id = 3",
        f"MERGE INTO {t} x USING (SELECT 5 AS id, 'e' AS v) y ON x.id = y.id "
        "WHEN NOT MATCHED THEN INSERT *",
    ):
        version = s.sql(statement).version
        assert version is not None
        ours = sorted(tuple(r) for r in s.sql(f"SELECT id, v FROM {t}").df.collect())
        assert duckdb_rows(location, version, "id, v") == ours
        assert deltalake_rows(location, version, "id, v") == ours
    assert ours == [(1, "a"), (2, "B"), (4, "d"), (5, "e")]


def test_a_variant_column_is_still_refused_by_name(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    with pytest.raises(UnsupportedFeatureError, match="VARIANT"):
        s.sql("CREATE TABLE t (id BIGINT, v VARIANT)")


def test_a_catalog_owned_table_is_refused_for_reads_and_writes(
    spark: Any, fixture_copy: Any, tmp_path: Path
) -> None:
    """Its commits are staged for a catalog to ratify: a filesystem writer must not commit
    and a reader of the log alone would miss them."""
    location = fixture_copy("delta-modern/catalog-owned-preview")
    before = sorted(p.name for p in (location / "_delta_log").iterdir())
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    t = f"delta.`{location}`"
    for statement in (
        f"SELECT * FROM {t}",
        f"INSERT INTO {t} SELECT * FROM {t}",
        f"DELETE FROM {t}",
    ):
        with pytest.raises(UnsupportedFeatureError, match=r"a catalog owns .*catalogManaged"):
            s.sql(statement).df.collect()
    assert sorted(p.name for p in (location / "_delta_log").iterdir()) == before
