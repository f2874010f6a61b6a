"""Tables txsql refuses by name however they were made: a VARIANT column (txsql reads
VARIANT values but writes none), and a table whose commits a catalog owns.

(deltalake's deletion-vector tables, which list variantType without a VARIANT column, are
written end to end in tests/engine/test_modern_fixtures.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from txsql.errors import UnsupportedFeatureError

pytestmark = [pytest.mark.spark, pytest.mark.interop]


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
