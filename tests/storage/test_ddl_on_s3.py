"""Schemas, RENAME, TRUNCATE and DROP on an s3:// warehouse (moto): catalog and log only."""

from __future__ import annotations

import pytest

import txsql
from tests.storage.moto_s3 import MotoS3
from txsql.errors import SchemaNotEmptyError

pytestmark = [pytest.mark.spark]


def test_schema_rename_truncate_drop_on_s3(
    s3_session: txsql.Session, moto_s3: MotoS3, s3_bucket: str
) -> None:
    s = s3_session
    s.sql("CREATE SCHEMA sales")
    s.sql("CREATE TABLE sales.orders (id INT)")
    keys = moto_s3.keys(s3_bucket)
    assert "wh/_txsql_catalog/_schemas/sales.json" in keys
    assert "wh/_txsql_catalog/sales.orders.json" in keys
    assert "wh/sales.db/orders/_delta_log/00000000000000000000.json" in keys
    assert s.sql("TRUNCATE TABLE sales.orders").version == 1
    s.sql("ALTER TABLE sales.orders RENAME TO sales.o2")
    assert [r.tableName for r in s.sql("SHOW TABLES IN sales").df.collect()] == ["o2"]
    with pytest.raises(SchemaNotEmptyError):
        s.sql("DROP SCHEMA sales")
    s.sql("DROP TABLE sales.o2")
    keys = moto_s3.keys(s3_bucket)
    assert not [k for k in keys if k.startswith("wh/sales.db/")], keys
    assert "wh/_txsql_catalog/sales.o2.json" not in keys
    s.sql("DROP SCHEMA sales")
    assert "wh/_txsql_catalog/_schemas/sales.json" not in moto_s3.keys(s3_bucket)
