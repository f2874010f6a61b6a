"""The executor import check: once per cluster session, typed error naming how to ship txsql.

The check's Spark job is stubbed here (no JVM); tests/interop/test_cluster.py runs it on a
real standalone cluster whose executors cannot import txsql.
"""

from __future__ import annotations

from typing import Any

import pytest

import txsql.errors as errors
from txsql.engine import executors
from txsql.engine.failures import typed_engine_error

# The shape of the error a classic session raises when an executor cannot unpickle a task
# function whose module it cannot import.
UNPICKLE_TEXT = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/opt/spark/python/lib/pyspark.zip/pyspark/serializers.py", line 471, in loads
    return cloudpickle.loads(obj, encoding=encoding)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ModuleNotFoundError: No module named '{module}'
"""


class _Job:
    def __init__(self, spark: _Spark) -> None:
        self.spark = spark

    def mapInArrow(self, function: Any, schema: str) -> _Job:
        self.spark.functions.append(function)
        return self

    def collect(self) -> list[Any]:
        if self.spark.failure is not None:
            raise self.spark.failure
        return [("ok", True)]


class _Conf:
    def __init__(self, master: str) -> None:
        self.master = master

    def get(self, key: str, default: Any = None) -> Any:
        assert key == "spark.master"
        return self.master


_ALIVE: list[Any] = []  # no stub is freed: a new one never reuses a checked one's id()


class _Spark:
    """Stands in for a SparkSession: records the jobs the check starts."""

    def __init__(self, master: str, failure: Exception | None = None) -> None:
        _ALIVE.append(self)
        self.conf = _Conf(master)
        self.failure = failure
        self.functions: list[Any] = []

    def range(self, *args: Any, **kwargs: Any) -> _Job:
        return _Job(self)


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4, 2]"])
def test_local_masters_are_not_checked(master: str) -> None:
    spark = _Spark(master, failure=RuntimeError(UNPICKLE_TEXT.format(module="txsql")))
    executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]
    assert spark.functions == [], "no job: local workers share the driver's Python"


def test_cluster_session_is_checked_once() -> None:
    spark = _Spark("spark://127.0.0.1:7077")
    executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]
    executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]
    assert len(spark.functions) == 1


def test_missing_txsql_on_executors_fails_typed_and_is_checked_again() -> None:
    spark = _Spark("yarn", failure=RuntimeError(UNPICKLE_TEXT.format(module="txsql")))
    with pytest.raises(errors.ExecutorSetupError, match="cannot import txsql") as caught:
        executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]
    assert "spark.submit.pyFiles" in caught.value.hint and "pip install" in caught.value.hint
    spark.failure = None  # the user shipped txsql: the next statement checks again, passes
    executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]
    assert len(spark.functions) == 2


def test_other_probe_failures_are_not_disguised() -> None:
    spark = _Spark("spark://h:7077", failure=RuntimeError("executor lost"))
    with pytest.raises(RuntimeError, match="executor lost"):
        executors.check_executors_import_txsql(spark)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "typed"),
    [
        ("txsql", True),
        ("txsql.dv.store", True),
        ("pyroaring", True),
        ("numpy", True),
        ("pyarrow", True),
        ("some_user_package", False),  # a user's UDF dependency: not txsql's to explain
        ("txsqlx", False),
    ],
)
def test_missing_module_in_a_spark_error(module: str, typed: bool) -> None:
    error = typed_engine_error(RuntimeError(UNPICKLE_TEXT.format(module=module)))
    if typed:
        assert isinstance(error, errors.ExecutorSetupError)
        assert repr(module) in error.message
    else:
        assert error is None


def test_the_drivers_own_import_error_is_not_blamed_on_executors() -> None:
    assert typed_engine_error(ModuleNotFoundError("No module named 'txsql'")) is None
