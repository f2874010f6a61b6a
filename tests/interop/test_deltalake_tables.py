"""deltalake and txsql on the same tables: a VARIANT table txsql writes is one deltalake
reads, and a table whose commits a catalog owns is refused by name.

(deltalake's deletion-vector tables, which list variantType without a VARIANT column, are
written end to end in tests/engine/test_modern_fixtures.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

import txsql
from tests.interop.readers import deltalake_rows
from txsql.errors import UnsupportedFeatureError

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def test_a_variant_table_txsql_writes_is_read_by_deltalake(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v VARIANT)")
    s.sql("""INSERT INTO t VALUES (1, parse_json('{"a": 1}')), (2, NULL)""")
    path = s.table("t").location
    assert "variantType" in (DeltaTable(path).protocol().reader_features or [])
    assert deltalake_rows(path, 1, "id, v IS NULL") == [(1, False), (2, True)]


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
