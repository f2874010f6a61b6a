"""Object-store configuration and failures: one precedence, typed errors, nothing written."""

from __future__ import annotations

import pytest

from tests.storage.moto_s3 import MisbehavingS3, MotoS3, free_port
from txsql.errors import (
    BucketNotFoundError,
    ConditionalWriteUnsupportedError,
    InvalidStorageOptionError,
    StorageCredentialsError,
    StorageRegionError,
    StorageUnreachableError,
    TxSqlError,
)
from txsql.log.actions import Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.storage import file_io_for
from txsql.storage.options import resolve_settings
from txsql.txn.transaction import Transaction

HADOOP = {
    "spark.hadoop.fs.s3a.endpoint": "minio.local:9000",
    "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    "spark.hadoop.fs.s3a.access.key": "hadoop-key",
    "spark.hadoop.fs.s3a.secret.key": "hadoop-secret",
    "spark.hadoop.fs.s3a.bucket.lake.access.key": "lake-key",
    "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
    "spark.hadoop.fs.s3a.path.style.access": "true",
}


def test_options_precedence_explicit_over_environment_over_hadoop() -> None:
    env = {"AWS_REGION": "us-east-2", "AWS_SECRET_ACCESS_KEY": "env-secret"}
    only_hadoop = resolve_settings("s3", "other", None, hadoop=HADOOP, environ={}).config_dict()
    assert only_hadoop["endpoint"] == "http://minio.local:9000"
    assert only_hadoop["access_key_id"] == "hadoop-key"
    assert only_hadoop["virtual_hosted_style_request"] == "false"
    per_bucket = resolve_settings("s3", "lake", None, hadoop=HADOOP, environ={}).config_dict()
    assert per_bucket["access_key_id"] == "lake-key", "fs.s3a.bucket.<b>.* beats fs.s3a.*"

    merged = resolve_settings(
        "s3", "lake", {"AWS_REGION": "ap-south-1"}, hadoop=HADOOP, environ=env
    )
    config = merged.config_dict()
    assert config["region"] == "ap-south-1", "explicit beats environment and Hadoop"
    assert config["secret_access_key"] == "env-secret", "environment beats Hadoop"
    assert config["access_key_id"] == "lake-key", "Hadoop fills what nobody else set"
    assert merged.client_dict() == {"allow_http": "true"}, "http:// endpoint allows HTTP"


def test_options_reject_non_scalar_values() -> None:
    with pytest.raises(InvalidStorageOptionError, match="endpoint"):
        resolve_settings("s3", "b", {"endpoint": ["x"]}, environ={})


def test_unknown_option_key_is_a_typed_error(moto_s3: MotoS3, s3_bucket: str) -> None:
    fs = file_io_for(f"s3://{s3_bucket}/t", {**moto_s3.options(), "no_such_key": "1"})
    with pytest.raises(InvalidStorageOptionError, match="no_such_key") as info:
        fs.exists(f"s3://{s3_bucket}/t/x")
    assert s3_bucket in str(info.value)


def _create(location: str, options: dict[str, str]) -> None:
    log = DeltaLog.for_path(location, options)
    with Transaction(log) as txn:
        txn.stage([Protocol(1, 2), Metadata(id="t", schema_string='{"type":"struct","fields":[]}')])
        txn.commit("CREATE TABLE")


def test_missing_bucket(moto_s3: MotoS3) -> None:
    with pytest.raises(BucketNotFoundError, match="s3://no-such-bucket/t") as info:
        _create("s3://no-such-bucket/t", moto_s3.options())
    assert "Create the bucket" in info.value.hint


def test_unreachable_endpoint_names_the_location(s3_bucket: str, moto_s3: MotoS3) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StorageUnreachableError, match=s3_bucket) as info:
        _create(f"s3://{s3_bucket}/t", moto_s3.options(endpoint=dead))
    assert "endpoint" in info.value.hint
    assert moto_s3.keys(s3_bucket) == []


def test_missing_credentials(
    s3_bucket: str, moto_s3: MotoS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    options = {k: v for k, v in moto_s3.options().items() if "access" not in k}
    # No keys anywhere: object_store asks the instance metadata service, absent here.
    options["metadata_endpoint"] = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StorageCredentialsError, match=s3_bucket) as info:
        _create(f"s3://{s3_bucket}/t", options)
    assert "AWS_ACCESS_KEY_ID" in info.value.hint
    assert moto_s3.keys(s3_bucket) == []


def test_region_mismatch(s3_bucket: str, moto_s3: MotoS3) -> None:
    with (
        MisbehavingS3(moto_s3.port, "wrong-region") as fake,
        pytest.raises(StorageRegionError, match=s3_bucket) as info,
    ):
        _create(f"s3://{s3_bucket}/t", moto_s3.options(endpoint=fake.endpoint))
    assert "region" in info.value.hint
    assert moto_s3.keys(s3_bucket) == []


def test_store_ignoring_conditional_writes_is_refused_on_create(
    s3_bucket: str, moto_s3: MotoS3
) -> None:
    location = f"s3://{s3_bucket}/t"
    with MisbehavingS3(moto_s3.port, "ignore-if-none-match") as fake:
        with pytest.raises(ConditionalWriteUnsupportedError, match=location):
            _create(location, moto_s3.options(endpoint=fake.endpoint))
        assert any(method == "PUT" for method, _ in fake.requests), "the probe went through it"
    assert moto_s3.keys(s3_bucket) == [], "no log byte, no probe left behind"
    # The same bucket through the honest server is fine.
    _create(location, moto_s3.options())
    assert "t/_delta_log/00000000000000000000.json" in moto_s3.keys(s3_bucket)


def test_every_error_is_a_txsql_error_with_a_hint() -> None:
    for cls in (
        BucketNotFoundError,
        ConditionalWriteUnsupportedError,
        InvalidStorageOptionError,
        StorageCredentialsError,
        StorageRegionError,
        StorageUnreachableError,
    ):
        assert issubclass(cls, TxSqlError) and cls.default_hint
