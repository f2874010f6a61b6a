"""Session on an s3:// warehouse (moto): everything below Spark's data plane.

Spark's s3a:// needs the hadoop-aws jars, which cannot be installed here, so statements
that make Spark read or write data files are checked to fail with a typed error and leave
the table unchanged; CREATE, the catalog, DESCRIBE HISTORY and VACUUM run for real.
"""

from __future__ import annotations

from typing import Any

import pytest

import txsql
from tests.storage.moto_s3 import MotoS3
from txsql.errors import TableExistsError, UnsupportedStorageError
from txsql.log.deltalog import DeltaLog
from txsql.planner.operations.vacuum import CHECK_CONF
from txsql.storage.leftovers import STAGING_WINDOW_ENV

pytestmark = [pytest.mark.spark]


def test_create_catalog_history_on_s3(
    s3_session: txsql.Session, moto_s3: MotoS3, s3_bucket: str
) -> None:
    s = s3_session
    s.sql("CREATE TABLE t (id INT, name STRING)")
    s.sql(f"CREATE TABLE elsewhere (id INT) LOCATION 's3a://{s3_bucket}/other/e'")
    keys = moto_s3.keys(s3_bucket)
    assert "wh/_txsql_catalog/t.json" in keys and "wh/_txsql_catalog/elsewhere.json" in keys
    assert "wh/t/_delta_log/00000000000000000000.json" in keys
    assert "other/e/_delta_log/00000000000000000000.json" in keys
    assert not any(".txsql-put-if-absent-probe" in k for k in keys), "probe cleaned up"
    assert s.catalog.names() == ["elsewhere", "t"]
    assert s.catalog.registered_location("elsewhere") == f"s3://{s3_bucket}/other/e"

    # The name is claimed with a conditional PUT: another location cannot take it.
    with pytest.raises(TableExistsError):
        s.sql(f"CREATE TABLE elsewhere (id INT) LOCATION 's3://{s3_bucket}/third'")
    assert s.sql("CREATE TABLE IF NOT EXISTS t (id INT, name STRING)").version == 0

    history = s.sql("DESCRIBE HISTORY t").df.collect()
    assert [(r["version"], r["operation"]) for r in history] == [(0, "CREATE TABLE")]


def test_spark_without_s3a_fails_typed_and_changes_nothing(
    s3_session: txsql.Session, moto_s3: MotoS3, s3_bucket: str
) -> None:
    s = s3_session
    s.sql("CREATE TABLE t (id INT)")
    with pytest.raises(UnsupportedStorageError, match="s3a") as info:
        s.sql("INSERT INTO t VALUES (1), (2)")
    assert "hadoop-aws" in info.value.hint
    log = DeltaLog.for_path(f"s3://{s3_bucket}/wh/t", moto_s3.options())
    assert log.latest_version() == 0, "the failed INSERT committed nothing"


def test_vacuum_lists_and_deletes_through_the_store(
    s3_session: txsql.Session,
    spark: Any,
    moto_s3: MotoS3,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = s3_session
    s.sql("CREATE TABLE t (id INT)")
    client = moto_s3.client()
    for key in ("wh/t/orphan.parquet", "wh/t/p=1/orphan2.parquet", "wh/t/_hidden/keep.bin"):
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    spark.conf.set(CHECK_CONF, "false")
    try:
        import time

        time.sleep(1.1)  # S3 mtimes have whole seconds: the orphans must be older than now
        # Files no commit names may be a running statement's: RETAIN 0 does not reach them.
        assert s.sql("VACUUM t RETAIN 0 HOURS DRY RUN").df.collect() == []
        # moto cannot age objects: shrink the staging window instead (tests only).
        monkeypatch.setenv(STAGING_WINDOW_ENV, "0")
        dry = s.sql("VACUUM t RETAIN 0 HOURS DRY RUN").df.collect()
        assert sorted(r["path"] for r in dry) == [
            f"s3://{s3_bucket}/wh/t/orphan.parquet",
            f"s3://{s3_bucket}/wh/t/p=1/orphan2.parquet",
        ]
        result = s.sql("VACUUM t RETAIN 0 HOURS")
    finally:
        spark.conf.unset(CHECK_CONF)
    assert result.metrics["numDeletedFiles"] == 2
    keys = moto_s3.keys(s3_bucket)
    assert "wh/t/orphan.parquet" not in keys and "wh/t/p=1/orphan2.parquet" not in keys
    assert "wh/t/_hidden/keep.bin" in keys
    operations = [r["operation"] for r in s.sql("DESCRIBE HISTORY t").df.collect()]
    assert operations == ["VACUUM END", "VACUUM START", "CREATE TABLE"]
