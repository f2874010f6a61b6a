"""The one exception tree of txsql.

Every error derives from :class:`TxSqlError` and carries a ``hint`` telling the user how
to fix or avoid it. Leaf classes are typed so callers catch a type, never match a string.
This module is a leaf: it imports nothing from txsql.

It stays one module over 400 lines on purpose: it holds declarations and hints only, users
catch every error as ``txsql.errors.<Name>``, and several leaves belong to two families
(``VacuumedVersionError`` is a missing version and a missing file), which a split by
family would make import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TxSqlError(Exception):
    """Base class for every error raised by txsql.

    ``statement``, ``line`` and ``column`` (1-based, in the cell or script) are filled in
    by the session for errors raised while running a statement.
    """

    default_hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        if not hasattr(self, "line"):
            self.statement: str = ""
            self.line: int | None = None
            self.column: int | None = None
        super().__init__(self._render())

    def locate(self, statement: str, line: int, column: int) -> None:
        """Attach the statement's position in the cell if nothing more precise is known."""
        if self.line is None:
            self.statement, self.line, self.column = statement, line, column
            self.args = (self._render(),)

    def _render(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        text = self.message + where
        return f"{text}\nHow to fix: {self.hint}" if self.hint else text


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


# --- tables, schemas and the log ------------------------------------------------------


class TableNotFoundError(TxSqlError):
    """No Delta table at the given name or path."""

    default_hint = "Check the name or path, or create it with CREATE TABLE."


class TableExistsError(TxSqlError):
    """CREATE TABLE on a location that already holds a Delta table."""

    default_hint = "Use CREATE TABLE IF NOT EXISTS, or pick another name or LOCATION."


class SchemaNotFoundError(TxSqlError):
    """A schema (database) name that the warehouse's catalog does not know."""

    default_hint = "Check the name with SHOW SCHEMAS, or create it with CREATE SCHEMA."


class SchemaExistsError(TxSqlError):
    """CREATE SCHEMA of a name that already exists."""

    default_hint = "Use CREATE SCHEMA IF NOT EXISTS, or pick another name."


class SchemaNotEmptyError(TxSqlError):
    """DROP SCHEMA (RESTRICT) of a schema that still holds tables."""

    default_hint = "Drop its tables first, or use DROP SCHEMA ... CASCADE to drop them too."


class NonEmptyLocationError(TxSqlError):
    """CREATE TABLE on a directory that holds files but no Delta log."""

    default_hint = (
        "Pick an empty or new directory, or move the files away first. To make a table "
        "of existing Parquet files, read them and CREATE TABLE ... AS SELECT into a new "
        "location."
    )


class CorruptLogError(TxSqlError):
    """A commit or checkpoint could not be parsed or the log has a gap."""

    default_hint = (
        "The table's _delta_log is damaged; restore the missing or broken file from a "
        "backup, or read an earlier version that is intact."
    )


class ChecksumMismatchError(CorruptLogError):
    """The table state rebuilt from the log differs from a version's ``.crc`` checksum file."""

    default_hint = (
        "A commit or checkpoint lost lines or rows: restore the damaged _delta_log file from "
        "a backup, or read an earlier version whose checksum still matches."
    )


class VersionNotFoundError(TxSqlError):
    """Time travel to a version or timestamp the log cannot reconstruct."""

    default_hint = "Run DESCRIBE HISTORY to see which versions are available."


class RestoreError(VersionNotFoundError):
    """The version to restore cannot be rebuilt because its files are gone."""

    default_hint = (
        "VACUUM deleted files of that version. Restore a newer version (DESCRIBE HISTORY "
        "lists them), or recover the files from a backup."
    )


class VacuumedVersionError(VersionNotFoundError, DataFileError):
    """A time-travel read of a version whose data files VACUUM already deleted.

    Both a VersionNotFoundError (the version cannot be read any more) and a DataFileError
    (the file the reader missed). Attributes:
        oldest_readable: the oldest version from which every version up to the latest
            still has all its files (None when even the latest lacks one).
        latest: the table's latest version.
    """

    def __init__(
        self, message: str, *, path: str, oldest_readable: int | None, latest: int
    ) -> None:
        self.path = path
        self.oldest_readable = oldest_readable
        self.latest = latest
        if oldest_readable is None:
            hint = "Even the latest version lacks a file: restore the deleted files from a backup."
        else:
            hint = (
                f"Read VERSION AS OF {oldest_readable} or newer (up to {latest}; DESCRIBE "
                "HISTORY lists them). To time travel further back in future, raise "
                "delta.deletedFileRetentionDuration before VACUUM runs."
            )
        super().__init__(message, hint=hint)


class RetentionTooShortError(TxSqlError):
    """VACUUM RETAIN is shorter than the table's deleted-file retention."""


class ChangeDataFeedError(TxSqlError):
    """A change-data-feed read of versions the feed does not cover, or a bad range."""

    default_hint = (
        "Read changes only from versions written while delta.enableChangeDataFeed was true "
        "(DESCRIBE HISTORY shows the SET TBLPROPERTIES that enabled it); compare older "
        "versions with VERSION AS OF instead."
    )


class UnsupportedFeatureError(TxSqlError):
    """The table needs a protocol version or table feature txsql does not implement."""

    default_hint = "Read this table with an engine that supports the listed features."


class CorruptDeletionVectorError(TxSqlError):
    """A deletion-vector file or inline bitmap failed its size, checksum or cardinality check."""

    default_hint = (
        "The deletion vector file is damaged or was replaced; restore it from a backup or "
        "RESTORE the table to a version that does not use it."
    )


class InvalidTablePropertyError(TxSqlError):
    """A table property has an unknown key or an invalid value."""


class AppendOnlyTableError(TxSqlError):
    """A statement would remove or change rows of a ``delta.appendOnly`` table."""

    default_hint = (
        "This table only accepts appends (INSERT INTO). To change existing rows, first run "
        "ALTER TABLE ... SET TBLPROPERTIES ('delta.appendOnly' = 'false')."
    )


# --- columns and their rules (types, constraints, generated, identity, defaults) ------


class SchemaError(TxSqlError):
    """Data does not fit the table's schema, or a schema string is invalid."""

    default_hint = "Compare the column names and types with DESCRIBE of the table."


class CharVarcharLengthError(SchemaError):
    """A value is longer than its CHAR(n) / VARCHAR(n) column allows."""

    default_hint = (
        "Shorten the value (e.g. left(value, n)) or widen the column type; nothing was written."
    )


class ConstraintViolationError(SchemaError):
    """A written row breaks a rule the table declares; the statement wrote nothing.

    [Delta: DELTA_VIOLATE_CONSTRAINT_WITH_VALUES, SQLSTATE 23001]
    """

    default_hint = "Fix or filter the offending rows; the table is unchanged."


class CheckConstraintViolationError(ConstraintViolationError):
    """A row makes a CHECK constraint (or a legacy invariant) FALSE or NULL."""

    default_hint = (
        "Fix or filter the rows that break the constraint (NULL breaks it too), or "
        "ALTER TABLE t DROP CONSTRAINT c if the rule is wrong; the table is unchanged."
    )


class NotNullViolationError(ConstraintViolationError):
    """A NULL was written to a NOT NULL column. [Delta: DELTA_NOT_NULL_CONSTRAINT_VIOLATED]"""

    default_hint = (
        "Give the column a value (e.g. COALESCE(x, 0)), or ALTER TABLE t ALTER COLUMN c DROP "
        "NOT NULL; the table is unchanged."
    )


class GeneratedColumnMismatchError(ConstraintViolationError):
    """An explicit value differs from what a generated column's expression computes."""

    default_hint = (
        "Leave the generated column out of the INSERT column list (txsql computes it), or "
        "write exactly the expression's value; the table is unchanged."
    )


class IdentityColumnError(SchemaError):
    """A write gives a value to a GENERATED ALWAYS identity column, or updates one.

    [Delta: DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED]
    """

    default_hint = (
        "Leave the identity column out of the INSERT column list; txsql hands out its "
        "values. Use GENERATED BY DEFAULT AS IDENTITY to allow explicit values."
    )


class ConstraintDefinitionError(SchemaError):
    """ADD/DROP CONSTRAINT, SET NOT NULL or a column rule cannot be defined as asked."""

    default_hint = "See DESCRIBE DETAIL of the table for its constraints and columns."


# --- SQL front end and notebook magic -------------------------------------------------


class SqlError(TxSqlError):
    """A statement could not be parsed, planned or run."""

    def __init__(
        self,
        message: str,
        *,
        statement: str = "",
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.statement = statement
        self.line = line
        self.column = column
        super().__init__(message, hint=hint)


class SqlParseError(SqlError):
    """The SQL text is not valid."""

    default_hint = "Check the syntax near the position shown."


class ExpressionTooDeepError(SqlError):
    """An expression is nested too deeply to plan (e.g. thousands of parentheses)."""

    default_hint = (
        "Nest fewer levels (about 40 levels of parentheses parse): long OR/AND chains need "
        "no extra parentheses, and IN (...) lists many alternatives."
    )


class UnsupportedStatementError(SqlError):
    """Valid SQL that txsql does not run (yet)."""


class MergeCardinalityError(SqlError):
    """Several source rows match one target row that MERGE updates or deletes.

    [Delta: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]
    """

    default_hint = (
        "Deduplicate the source so each target row matches at most one source row (e.g. "
        "keep the latest row per key with ROW_NUMBER() OVER (PARTITION BY key ORDER BY ...) "
        "= 1), or make the ON condition more selective."
    )


class DataValueError(SqlError):
    """Spark could not compute a value the statement needs (ANSI SQL's data exceptions,
    SQLSTATE class 22): an invalid cast, a division by zero, an overflow...

    Raised while the statement runs or while its rows are fetched (``Result.collect()``,
    ``to_pandas()``, ``show()``, the magic); a write that fails this way commits nothing.
    ``spark_condition`` is Spark's error class (e.g. ``DIVIDE_BY_ZERO``).
    """

    spark_condition: str = ""
    default_hint = (
        "Fix the value or the expression (the try_ functions, e.g. try_cast, return NULL "
        "instead of failing); nothing was committed."
    )


class InvalidCastError(DataValueError):
    """A value cannot be converted to the type it is used as (Spark: CAST_INVALID_INPUT),
    e.g. the string 'abc' compared with a BIGINT column."""

    default_hint = (
        "Use a value of the column's type (id = 123, not id = 'abc'), or try_cast(value AS "
        "type) to get NULL for malformed input; nothing was committed."
    )


class ParameterTypeError(InvalidCastError):
    """A ``:name`` parameter's value does not fit the type the statement uses it as.

    ``parameter`` is its name (without the colon).
    """

    parameter: str = ""


class DivisionByZeroError(DataValueError):
    """A division or remainder by zero (Spark: DIVIDE_BY_ZERO, SQLSTATE 22012)."""

    default_hint = (
        "Guard the divisor (a / NULLIF(b, 0)) or use try_divide(a, b), which returns NULL "
        "for b = 0; nothing was committed."
    )


class ArithmeticOverflowError(DataValueError):
    """A number does not fit its type (Spark: ARITHMETIC_OVERFLOW, CAST_OVERFLOW,
    NUMERIC_VALUE_OUT_OF_RANGE, SQLSTATE 22003)."""

    default_hint = (
        "Compute in a wider type (CAST(x AS BIGINT) or DECIMAL(38, s)), or use try_add / "
        "try_multiply / try_cast to get NULL instead; nothing was committed."
    )


class MagicUsageError(TxSqlError):
    """The magic line itself is wrong (unknown option, bad value, missing variable)."""


class ScenarioError(TxSqlError):
    """A teaching scenario's step did not go as its interleaving requires."""

    default_hint = (
        "The scenario's table or session was changed while it ran, or txsql misbehaved: "
        "run it again on a fresh session; if it still fails, report it with the chained error."
    )


# --- transactions ---------------------------------------------------------------------


class TransactionError(TxSqlError):
    """Misuse of a transaction (committing twice, writing a second table...)."""


class TransactionAbortedError(TransactionError):
    """A statement inside BEGIN failed, so the whole transaction is void.

    Like PostgreSQL's "current transaction is aborted": every further statement and
    COMMIT is refused until ROLLBACK, so a transaction never commits half of its work.

    Attributes:
        statement_number: 1-based position (after BEGIN) of the statement that failed.
        cause: the first line of that statement's error.
        failed_statement: that statement's SQL text.
    """

    default_hint = "ROLLBACK to continue; then run the transaction again."

    def __init__(self, statement_number: int, cause: str, failed_statement: str = "") -> None:
        self.statement_number = statement_number
        self.cause = cause
        self.failed_statement = failed_statement
        shown = " ".join(failed_statement.split())[:60]
        where = f" (`{shown}`)" if shown else ""
        super().__init__(
            f"the transaction was aborted by the error in statement {statement_number}{where}:"
            f" {cause}; nothing will be written"
        )


class TableNotEnrolledError(TransactionError):
    """A transaction writes several tables and one of them is not enrolled in multi-table
    transactions (``txsql.multiTableTransactions``); refused before anything is staged.

    Attributes:
        tables: the names of the tables that are not enrolled.
    """

    def __init__(self, tables: tuple[str, ...]) -> None:
        self.tables = tables
        alters = "; ".join(
            f"ALTER TABLE {t} SET TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
            for t in tables
        )
        shown = ", ".join(tables)
        super().__init__(
            f"a transaction writing several tables needs each one enrolled in multi-table "
            f"transactions; {shown} {'is' if len(tables) == 1 else 'are'} not",
            hint=f"ROLLBACK, then run {alters} (other Delta writers can no longer write an "
            f"enrolled table), and run the transaction again.",
        )


class PreparedTransactionExistsError(TransactionError):
    """PREPARE TRANSACTION named an id the warehouse's coordinator already holds (prepared,
    committed or rolled back): ids are never reused, so COMMIT PREPARED stays idempotent."""

    default_hint = (
        "Choose another id (e.g. your sink's checkpoint id); SHOW TRANSACTIONS lists the "
        "ids in use. The transaction was not prepared; ROLLBACK or PREPARE it again."
    )


class PreparedTransactionNotFoundError(TransactionError):
    """COMMIT PREPARED / ROLLBACK PREPARED named an id no PREPARE TRANSACTION wrote."""

    default_hint = "SHOW TRANSACTIONS lists the prepared transactions and their ids."


class PreparedTransactionCommittedError(TransactionError):
    """ROLLBACK PREPARED of a transaction that was already committed: it stays committed.

    Attributes:
        versions: table -> the version its part of the transaction became.
    """

    default_hint = (
        "Nothing was changed. To undo its effect, write the inverse change (or RESTORE the "
        "tables) in a new transaction."
    )

    def __init__(self, message: str, versions: dict[str, int]) -> None:
        self.versions = versions
        super().__init__(message)


class PreparedTransactionRolledBackError(TransactionError):
    """COMMIT PREPARED of a transaction that was rolled back (by ROLLBACK PREPARED, or by a
    COMMIT PREPARED that found a conflict): nothing of it was ever visible."""

    default_hint = "Run the transaction again (and PREPARE it under a new id)."


RowDetails = tuple[dict[str, Any], ...]


class CommitConflictError(TxSqlError):
    """A concurrent commit invalidated this transaction.

    Attributes:
        winning_version: the version the other writer committed.
        winning_operation: that commit's ``operation`` (e.g. ``DELETE``).
        winning_transaction: the id of the multi-table transaction that commit was part
            of (as SHOW TRANSACTIONS lists it), or None.
        isolation_level: the level this transaction was checked under.
        rule: the conflict rule that fired, in words.
        partitions: overlapping partitions, e.g. ``("p=1",)``.
        files: overlapping files (paths as in the log).
        rows: for row-level conflicts, path -> sorted physical row indexes both touched.
        row_details: the colliding rows one by one (the first few), as
            ``{"file": path, "row": index, <key column>: value, ...}``; values are read at
            the winner's version when cheap, else only file and position are given. They
            are read on first access (a conflict never waits for Spark to fetch them).
    """

    default_hint = "Re-run the statement; it will read the newest version."

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_operation: str | None = None,
        isolation_level: str | None = None,
        rule: str = "",
        partitions: tuple[str, ...] = (),
        files: tuple[str, ...] = (),
        hint: str | None = None,
        rows: dict[str, tuple[int, ...]] | None = None,
        row_details: RowDetails | Callable[[], RowDetails] = (),
    ) -> None:
        self._row_details = row_details
        self.winning_version = winning_version
        self.winning_operation = winning_operation
        self.winning_transaction: str | None = None
        self.isolation_level = isolation_level
        self.rule = rule
        self.partitions = partitions
        self.files = files
        self.rows = rows
        super().__init__(message, hint=hint)

    @property
    def row_details(self) -> RowDetails:
        if callable(self._row_details):
            loader, self._row_details = self._row_details, ()
            self._row_details = loader()
        return self._row_details


class ProtocolChangedError(CommitConflictError):
    """The winner changed the table protocol [Delta: ProtocolChangedException]."""


class MetadataChangedError(CommitConflictError):
    """The winner changed schema or properties [Delta: MetadataChangedException]."""


class ConcurrentTransactionError(CommitConflictError):
    """The winner wrote the same app id or domain [Delta: ConcurrentTransactionException]."""


class ConcurrentAppendError(CommitConflictError):
    """The winner added data this transaction read [Delta: ConcurrentAppendException]."""


class ConcurrentDeleteReadError(CommitConflictError):
    """The winner removed a file this transaction read [Delta: ConcurrentDeleteReadException]."""


class ConcurrentDeleteDeleteError(CommitConflictError):
    """The winner removed a file this transaction removes [ConcurrentDeleteDeleteException]."""


class TableCreatedConcurrentlyError(ProtocolChangedError, TableExistsError):
    """Another CREATE of the same table committed version 0 first.

    Both a TableExistsError (what the user did: create an existing table) and a
    ProtocolChangedError (the conflict rule that caught it, with the winner's details).
    """

    default_hint = "Use the table the other CREATE made, or CREATE TABLE IF NOT EXISTS."


class PreparedConflictError(CommitConflictError):
    """COMMIT PREPARED found a commit since PREPARE that conflicts with the prepared
    transaction; it was rolled back (its files deleted, nothing visible).

    A prepared transaction's reads are re-checked at the file level as if it had read its
    whole tables (the row-level read set does not outlive the preparing process), so only
    groups of blind appends are certain to commit.
    """

    default_hint = (
        "The prepared transaction was rolled back; run it again. Two-phase sinks should "
        "prepare blind appends (INSERT only), which always commit under WriteSerializable."
    )


class CommitRetriesExceededError(TxSqlError):
    """The commit lost more races than the configured retry limit allows."""

    default_hint = "Raise the retry limit (Session(max_commit_attempts=...)) or retry later."


class AddedFileMissingError(TransactionError):
    """A file the commit would add is gone (checked right before the put-if-absent).

    Something deleted it after the statement wrote it: a VACUUM run with a staging window
    overridden for tests, or a process outside txsql. Nothing was committed.
    """

    default_hint = (
        "Re-run the statement: it writes its files again; the table is unchanged. If it "
        "keeps happening, look for whoever deletes files under the table's directory "
        "(VACUUM keeps files no commit names for 24 hours; TXSQL_STAGING_WINDOW_MS shortens "
        "that, for tests only)."
    )


# --- warnings -------------------------------------------------------------------------


class TxSqlWarning(UserWarning):
    """Base class of txsql warnings (filter them with ``warnings.simplefilter``)."""


class CheckpointFallbackWarning(TxSqlWarning):
    """A checkpoint could not be used; the table was rebuilt from an older one or from commits."""


class ChecksumUnreadableWarning(TxSqlWarning):
    """A ``.crc`` checksum file could not be parsed, so that version was not verified."""


__all__ = [
    "AddedFileMissingError",
    "AppendOnlyTableError",
    "ArithmeticOverflowError",
    "BucketNotFoundError",
    "ChangeDataFeedError",
    "CharVarcharLengthError",
    "CheckConstraintViolationError",
    "CheckpointFallbackWarning",
    "ChecksumMismatchError",
    "ChecksumUnreadableWarning",
    "CommitConflictError",
    "CommitRetriesExceededError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "ConditionalWriteUnsupportedError",
    "ConstraintDefinitionError",
    "ConstraintViolationError",
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DataFileError",
    "DataValueError",
    "DiskFullError",
    "DivisionByZeroError",
    "ExecutorSetupError",
    "ExpressionTooDeepError",
    "GeneratedColumnMismatchError",
    "IdentityColumnError",
    "InvalidCastError",
    "InvalidStorageOptionError",
    "InvalidTablePropertyError",
    "MagicUsageError",
    "MergeCardinalityError",
    "MetadataChangedError",
    "NonEmptyLocationError",
    "NotNullViolationError",
    "ParameterTypeError",
    "PartitionValueTooLongError",
    "PreparedConflictError",
    "PreparedTransactionCommittedError",
    "PreparedTransactionExistsError",
    "PreparedTransactionNotFoundError",
    "PreparedTransactionRolledBackError",
    "ProtocolChangedError",
    "RestoreError",
    "RetentionTooShortError",
    "ScenarioError",
    "SchemaError",
    "SchemaExistsError",
    "SchemaNotEmptyError",
    "SchemaNotFoundError",
    "SparkStartError",
    "SqlError",
    "SqlParseError",
    "StorageCredentialsError",
    "StorageError",
    "StorageRegionError",
    "StorageUnreachableError",
    "StorageWriteError",
    "TableCreatedConcurrentlyError",
    "TableExistsError",
    "TableNotEnrolledError",
    "TableNotFoundError",
    "TransactionAbortedError",
    "TransactionError",
    "TxSqlError",
    "TxSqlWarning",
    "UnsupportedFeatureError",
    "UnsupportedStatementError",
    "UnsupportedStorageError",
    "VacuumedVersionError",
    "VersionExistsError",
    "VersionNotFoundError",
]
