"""Session-scoped moto S3 server on 127.0.0.1 (log in the session's temp dir), a fresh
bucket per test and a txsql Session whose warehouse is in it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import txsql
from tests.storage.moto_s3 import MotoS3
from txsql.storage.factory import configure_storage, storage_context


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    server = MotoS3(tmp_path_factory.mktemp("moto") / "moto-s3.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture()
def s3_bucket(moto_s3: MotoS3) -> str:
    """A fresh, empty bucket (name only)."""
    return moto_s3.new_bucket()


@pytest.fixture()
def s3_session(spark: Any, moto_s3: MotoS3, s3_bucket: str) -> Iterator[txsql.Session]:
    """A Session on ``s3://<s3_bucket>/wh``; the process's storage settings are put back
    afterwards (a Session on a store configures them)."""
    before = storage_context()
    try:
        yield txsql.Session(
            spark, warehouse=f"s3://{s3_bucket}/wh", storage_options=moto_s3.options()
        )
    finally:
        configure_storage(before.storage_options, before.hadoop_conf, before.spark_schemes)
