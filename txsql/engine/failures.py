"""Spark failures with a known cause, turned back into typed txsql errors.

Executors run txsql code (deletion-vector expansion, DV writes) and read data files; a
failure there reaches the driver as a Spark exception (``PythonException``,
``Py4JJavaError``, ``SparkConnectGrpcException``...) whose message carries the real cause
as text. Nothing here imports py4j or inspects JVM objects: the cause is recognised in the
message, so the same code works on classic PySpark and on Spark Connect.
"""

from __future__ import annotations

import re

from txsql import errors
from txsql.errors import DataFileError, ExecutorSetupError, ExpressionTooDeepError, TxSqlError

# The last line of a worker's Python traceback: "txsql.errors.CorruptDeletionVectorError: msg".
# The rendered message may continue with "How to fix: hint" on the next line.
_WORKER_ERROR = re.compile(
    r"txsql\.errors\.(?P<cls>\w+): (?P<message>[^\n]*)(?:\nHow to fix: (?P<hint>[^\n]*))?"
)
# Spark's messages for a data file it cannot read, and where they name the file.
_READ_FAILED = re.compile(
    r"FAILED_READ_FILE[.\w]*\] Encountered error while reading file (\S+?)\.?\s"
)
_PATH_NOT_FOUND = re.compile(r"PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?\s")
_FILE_NOT_FOUND = re.compile(r"java\.io\.FileNotFoundException: (?:File )?(\S+)")
_CAUSE = re.compile(r"Caused by: [\w.$]+: ([^\n]+)")
# A worker's Python could not import a module: "ModuleNotFoundError: No module named 'x.y'".
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")
# What txsql's executor-side code imports: missing on an executor, txsql cannot run there.
# (A user's own UDF missing some other module is the user's error, reported as is.)
_EXECUTOR_PACKAGES = frozenset({"txsql", "numpy", "pyarrow", "pyroaring"})
# Spark without the Hadoop connector of a store (hadoop-aws for s3a, gcs-connector...).
_MISSING_FILE_SYSTEM = re.compile(
    r'No FileSystem for scheme[: ]+"?(\w+)"?|ClassNotFoundException: '
    r"(?:Class )?[\w.]*\.(s3a|gs|azurebfs)\.\w*FileSystem"
)
_CONNECTOR_HINT = (
    "Add the store's Hadoop connector to Spark: for S3 "
    "spark.jars.packages=org.apache.hadoop:hadoop-aws:<Spark's Hadoop version> (s3a://), "
    "for GCS the gcs-connector jar, for ADLS hadoop-azure (abfss://); or map the scheme to "
    "one your cluster has with Session(spark_scheme={'s3': 's3'})."
)


def typed_engine_error(error: BaseException) -> TxSqlError | None:
    """The typed txsql error behind ``error``, or None when its cause is not recognised.

    Recognised: a txsql error raised on an executor (re-raised as the same class with its
    message and hint), a data file Spark could not read or find (:class:`DataFileError`
    naming the file and the reader's reason), Python's recursion limit
    (:class:`ExpressionTooDeepError`), and an executor whose Python cannot import txsql
    or a package it needs (:class:`ExecutorSetupError`).
    """
    if isinstance(error, TxSqlError):
        return error
    if isinstance(error, RecursionError):
        return ExpressionTooDeepError(
            "expression nested too deeply to plan (Python's recursion limit was reached)"
        )
    text = str(error)
    missing_fs = _MISSING_FILE_SYSTEM.search(text)
    if missing_fs is not None:
        scheme = missing_fs.group(1) or missing_fs.group(2) or "s3a"
        return errors.UnsupportedStorageError(
            f"Spark has no file system for {scheme}:// (its Hadoop connector is not on the "
            "classpath), so it cannot read or write the table's data files",
            hint=_CONNECTOR_HINT,
        )
    worker = _worker_error(text)
    if worker is not None:
        return worker
    if not isinstance(error, ImportError):  # the driver's own import errors are not executors'
        missing = _missing_executor_module(text)
        if missing is not None:
            return missing
    return _data_file_error(text)


def _missing_executor_module(text: str) -> ExecutorSetupError | None:
    found = _MISSING_MODULE.search(text)
    if found is None:
        return None
    module = found["module"]
    package = module.split(".")[0]
    if package not in _EXECUTOR_PACKAGES:
        return None
    if package == "txsql":
        return ExecutorSetupError(
            f"the Spark executors cannot import txsql (their Python has no module named "
            f"{module!r}): txsql runs on the driver but is not installed on the cluster"
        )
    return ExecutorSetupError(
        f"the Spark executors' Python has no module named {module!r}, which txsql needs "
        f"there (install txsql's dependencies on every node: pip install txsql)"
    )


def _worker_error(text: str) -> TxSqlError | None:
    # The last match is the raise that failed the task (earlier ones are its context).
    matches = list(_WORKER_ERROR.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    cls = getattr(errors, match["cls"], None)
    if not (isinstance(cls, type) and issubclass(cls, TxSqlError)):
        return None
    try:
        typed = cls(match["message"], hint=match["hint"])
    except TypeError:  # a class with a richer constructor (conflicts are never raised remotely)
        typed = TxSqlError(match["message"], hint=match["hint"])
    return typed


def _data_file_error(text: str) -> TxSqlError | None:
    for pattern in (_READ_FAILED, _PATH_NOT_FOUND, _FILE_NOT_FOUND):
        found = pattern.search(text)
        if found is not None:
            break
    else:
        return None
    path = found.group(1)
    causes = _CAUSE.findall(text)
    reason = causes[-1].strip() if causes else "the file does not exist"
    if pattern is _PATH_NOT_FOUND or pattern is _FILE_NOT_FOUND:
        reason = "the file does not exist"
    # The deepest cause often repeats the path; keep the message short.
    reason = reason.replace(path, "it").replace(path.replace("file:///", "file:/"), "it")
    error = DataFileError(f"data file {path} cannot be read: {reason}")
    error.path = path  # for the caller to tell a vacuumed old version from damage
    return error
