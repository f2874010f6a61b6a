"""Executors: a missing txsql package is a typed error saying how to ship it; object-store
FileIOs travel to executors in task closures (they pickle as their settings)."""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest

from tests.storage.moto_s3 import MotoS3
from txsql.engine.executors import check_executors_import_txsql, hadoop_storage_conf
from txsql.engine.failures import typed_engine_error
from txsql.errors import ExecutorSetupError
from txsql.storage import ObjectStoreFileIO, file_io_for

WORKER_TRACEBACK = (
    "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
    '  File "pyspark/serializers.py", line 471, in loads\n'
    "ModuleNotFoundError: No module named 'txsql'\n"
)


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    @property
    def getAll(self) -> dict[str, str]:
        return dict(self.values)


class _ClusterWithoutTxsql:
    """Just enough of a SparkSession on a cluster whose workers lack txsql."""

    def __init__(self) -> None:
        self.conf = _Conf(
            {"spark.master": "spark://10.0.0.1:7077", "spark.hadoop.fs.s3a.endpoint": "h:1"}
        )
        self.jobs = 0

    def range(self, n: int) -> Any:
        return self

    def mapInArrow(self, fn: Any, schema: str) -> Any:
        pickle.dumps(fn)  # what Spark does with the function before shipping it
        return self

    def collect(self) -> list[Any]:
        self.jobs += 1
        raise RuntimeError(WORKER_TRACEBACK)


def test_first_statement_fails_with_how_to_ship_txsql() -> None:
    spark = _ClusterWithoutTxsql()
    with pytest.raises(ExecutorSetupError, match=re.escape("spark://10.0.0.1:7077")) as info:
        check_executors_import_txsql(spark)  # type: ignore[arg-type]
    assert "pip install txsql" in info.value.hint
    assert "spark.submit.pyFiles" in info.value.hint
    assert hadoop_storage_conf(spark) == {"spark.hadoop.fs.s3a.endpoint": "h:1"}  # type: ignore[arg-type]


def test_worker_import_failure_mid_statement_is_typed() -> None:
    typed = typed_engine_error(RuntimeError(WORKER_TRACEBACK))
    assert isinstance(typed, ExecutorSetupError)


def test_object_store_file_io_pickles_as_settings(moto_s3: MotoS3, s3_bucket: str) -> None:
    root = f"s3://{s3_bucket}/t"
    fs = file_io_for(root, moto_s3.options())
    fs.write_if_absent(f"{root}/x", b"data")
    copy = pickle.loads(pickle.dumps(fs))
    assert isinstance(copy, ObjectStoreFileIO)
    assert copy.read(f"{root}/x") == b"data"
    assert copy.read_range(f"s3a://{s3_bucket}/t/x", 1, 2) == b"at", "s3a names the same object"


def test_spark_scheme_map() -> None:
    from txsql.errors import UnsupportedStorageError
    from txsql.storage.factory import configure_storage, spark_uri, storage_context

    before = storage_context()
    try:
        assert spark_uri("s3://lake/t/a.parquet") == "s3a://lake/t/a.parquet"
        assert spark_uri("gs://lake/t") == "gs://lake/t"
        configure_storage(spark_schemes={"s3a": "s3"})  # EMR: Spark's own s3:// file system
        assert spark_uri("s3://lake/t/a.parquet") == "s3://lake/t/a.parquet"
        with pytest.raises(UnsupportedStorageError, match="hdfs"):
            configure_storage(spark_schemes={"hdfs": "hdfs"})
    finally:
        configure_storage(before.storage_options, before.hadoop_conf, before.spark_schemes)
