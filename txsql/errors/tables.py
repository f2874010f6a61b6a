"""Errors about tables, schemas and the log, and about columns and their rules.

Columns' rules are types, constraints, generated and identity columns, and defaults.
:class:`VacuumedVersionError` is both a missing version and a missing file, so this
module imports :class:`DataFileError` from the storage errors.
"""

from __future__ import annotations

from txsql.errors.base import TxSqlError
from txsql.errors.environment import DataFileError

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
