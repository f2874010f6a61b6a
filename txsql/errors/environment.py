"""Errors of what txsql runs on: the file system or object store holding the tables, and Spark.

Most say how to fix the setup (credentials, endpoint, region, Java, txsql on the
executors); the storage family also holds the data files and commit files themselves
(:class:`DataFileError`, :class:`VersionExistsError`, :class:`StorageWriteError`).
"""

from __future__ import annotations

from txsql.errors.base import TxSqlError

# --- storage --------------------------------------------------------------------------


class StorageError(TxSqlError):
    """A problem talking to the file system holding a table."""


class UnsupportedStorageError(StorageError):
    """The table location uses a URI scheme txsql cannot write to."""

    default_hint = (
        "Use a local path, file://, s3:// (or s3a://), gs://, abfss:// or az:// locations."
    )


class StorageCredentialsError(StorageError):
    """The object store refused us, or no credentials were found for it."""

    default_hint = (
        "Set credentials in Session(storage_options={...}) (e.g. access_key_id and "
        "secret_access_key for S3), in the environment (AWS_ACCESS_KEY_ID, "
        "GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_ACCOUNT_KEY, ...) or in Spark's "
        "Hadoop configuration (spark.hadoop.fs.s3a.access.key, ...)."
    )


class BucketNotFoundError(StorageError):
    """The bucket or container of a location does not exist."""

    default_hint = (
        "Create the bucket first (txsql never creates buckets), or fix the bucket name and "
        "the endpoint in the location / storage_options."
    )


class StorageUnreachableError(StorageError):
    """The object store's endpoint did not answer (DNS, connection refused, timeout)."""

    default_hint = (
        "Check the endpoint (storage_options 'endpoint', AWS_ENDPOINT_URL or "
        "spark.hadoop.fs.s3a.endpoint), the network and any proxy, then re-run the statement."
    )


class StorageRegionError(StorageError):
    """The bucket lives in another region than the one requests are signed for."""

    default_hint = (
        "Set the bucket's region: storage_options={'region': ...}, AWS_REGION, or "
        "spark.hadoop.fs.s3a.endpoint.region."
    )


class ConditionalWriteUnsupportedError(StorageError):
    """The store does not honour put-if-absent (``If-None-Match: *``) writes."""

    default_hint = (
        "txsql commits with conditional PUTs and cannot run safely without them. Use a store "
        "that supports them (AWS S3, GCS, Azure, MinIO, recent Ceph/R2), or upgrade the "
        "S3-compatible server; nothing was written to the table."
    )


class InvalidStorageOptionError(StorageError):
    """A ``storage_options`` key or value the object store does not understand."""

    default_hint = (
        "Check the key against the obstore/object_store configuration names for this store "
        "(e.g. endpoint, region, access_key_id, secret_access_key, allow_http)."
    )


class VersionExistsError(StorageError):
    """Another writer already created this commit file (we lost the race)."""

    default_hint = "Re-read the table and retry; txsql's commit loop does this for you."

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(f"commit version {version} already exists")


class StorageWriteError(StorageError):
    """A file could not be written completely and durably; nothing was left under its name."""

    default_hint = (
        "The table is unchanged. Check that the file system is writable and healthy "
        "(permissions, I/O errors in the system log), then re-run the statement."
    )


class DiskFullError(StorageWriteError):
    """The disk, quota or file-size limit ran out while writing (ENOSPC, EDQUOT, EFBIG)."""

    default_hint = (
        "The table is unchanged. Free space on the disk holding the table (VACUUM removes "
        "unused files), raise the quota or the process file-size limit (ulimit -f), then "
        "re-run the statement."
    )


class DataFileError(StorageError):
    """A data file the log references is missing, truncated or not valid Parquet.

    Attributes:
        path: the file, as the reader named it (None when it named none).
    """

    path: str | None = None
    default_hint = (
        "The file was damaged or deleted outside the log. Restore it from a backup, or "
        "RESTORE the table to a version that does not reference it (DESCRIBE HISTORY lists "
        "the versions)."
    )


class PartitionValueTooLongError(StorageWriteError):
    """A partition directory name ``column=value`` is longer than the file system allows.

    Attributes:
        partition_column: the partition column.
        length: the directory name's length in bytes (after Hive-style escaping).
    """

    LIMIT_BYTES = 255  # NAME_MAX of Linux, macOS and Windows file systems and HDFS's default

    def __init__(self, column: str, value_prefix: str, length: int) -> None:
        self.partition_column = column
        self.length = length
        super().__init__(
            f"the partition value of column {column} ({value_prefix!r}...) makes the "
            f"directory name `{column}=...` {length} bytes long, over the file system's "
            f"limit of {self.LIMIT_BYTES} bytes per path component; nothing was written",
            hint=f"Partition by a shorter column (e.g. a hash or prefix of {column}: "
            f"substr({column}, 1, 100) in a generated column), or do not partition by "
            f"{column}; the table is unchanged.",
        )


# --- Spark ----------------------------------------------------------------------------


class SparkStartError(TxSqlError):
    """The local SparkSession started at ``%load_ext txsql`` could not start or warm up."""

    default_hint = (
        "Check that Java 17+ is installed and JAVA_HOME points to it, then run "
        "%reload_ext txsql (or pass --spark with a session you built yourself)."
    )


class ExecutorSetupError(TxSqlError):
    """The Python processes Spark starts on the executors cannot import txsql (or a module
    txsql needs there): txsql is installed where the driver runs but not on the cluster."""

    default_hint = (
        "Make txsql importable on every executor: pip install txsql into the Python the "
        "cluster runs (PYSPARK_PYTHON / spark.pyspark.python on each node), or ship it with "
        "the job: zip the txsql package (the directory holding txsql/__init__.py, e.g. "
        "zip -r txsql.zip txsql in its parent directory) and start the SparkSession with "
        ".config('spark.submit.pyFiles', '/path/to/txsql.zip') "
        "(spark-submit --py-files; on a running classic session "
        "spark.sparkContext.addPyFile('/path/to/txsql.zip'); on Spark Connect "
        "spark.addArtifacts('/path/to/txsql.zip', pyfile=True)). A zip holds only txsql: "
        "the executors also need pyarrow, numpy and pyroaring installed."
    )
