"""The one exception tree of txsql.

Every error derives from :class:`TxSqlError` and carries a ``hint`` telling the user how
to fix or avoid it. Leaf classes are typed so callers catch a type, never match a string.
The package is a leaf: it imports nothing from txsql but its own modules, so every layer
may raise its errors. Users catch every error as ``txsql.errors.<Name>``; this module
re-exports them all. One module per area:

* ``base``: the roots, :class:`TxSqlError` and :class:`TxSqlWarning`, and the warnings;
* ``environment``: storage (file systems, object stores, data and commit files) and Spark;
* ``tables``: tables, schemas and the log, and columns and their rules;
* ``sql``: the SQL front end (parsing, planning, data values) and the notebook magic;
* ``transactions``: transactions, prepared transactions and commit conflicts.

Some leaves belong to two families: ``VacuumedVersionError`` (tables) is also a
``DataFileError`` (environment), ``TableCreatedConcurrentlyError`` (transactions) also a
``TableExistsError`` (tables); so the modules import each other in that order only.
"""

from __future__ import annotations

from txsql.errors.base import (
    CheckpointFallbackWarning,
    ChecksumUnreadableWarning,
    TxSqlError,
    TxSqlWarning,
)
from txsql.errors.environment import (
    BucketNotFoundError,
    ConditionalWriteUnsupportedError,
    DataFileError,
    DiskFullError,
    ExecutorSetupError,
    InvalidStorageOptionError,
    PartitionValueTooLongError,
    SparkStartError,
    StorageCredentialsError,
    StorageError,
    StorageRegionError,
    StorageUnreachableError,
    StorageWriteError,
    UnsupportedStorageError,
    VersionExistsError,
)
from txsql.errors.sql import (
    ArithmeticOverflowError,
    DataValueError,
    DivisionByZeroError,
    ExpressionTooDeepError,
    InvalidCastError,
    MagicUsageError,
    MergeCardinalityError,
    ParameterTypeError,
    ScenarioError,
    SqlError,
    SqlParseError,
    UnsupportedStatementError,
)
from txsql.errors.tables import (
    AppendOnlyTableError,
    ChangeDataFeedError,
    CharVarcharLengthError,
    CheckConstraintViolationError,
    ChecksumMismatchError,
    ConstraintDefinitionError,
    ConstraintViolationError,
    CorruptDeletionVectorError,
    CorruptLogError,
    GeneratedColumnMismatchError,
    IdentityColumnError,
    InvalidTablePropertyError,
    NonEmptyLocationError,
    NotNullViolationError,
    RestoreError,
    RetentionTooShortError,
    SchemaError,
    SchemaExistsError,
    SchemaNotEmptyError,
    SchemaNotFoundError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VacuumedVersionError,
    VersionNotFoundError,
)
from txsql.errors.transactions import (
    AddedFileMissingError,
    CommitConflictError,
    CommitRetriesExceededError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MaintenanceStoppedError,
    MetadataChangedError,
    PreparedConflictError,
    PreparedTransactionCommittedError,
    PreparedTransactionExistsError,
    PreparedTransactionNotFoundError,
    PreparedTransactionRolledBackError,
    ProtocolChangedError,
    TableCreatedConcurrentlyError,
    TableNotEnrolledError,
    TransactionAbortedError,
    TransactionError,
)
from txsql.errors.transactions import RowDetails as RowDetails  # the type of row_details

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
    "MaintenanceStoppedError",
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

# Each class keeps reading as ``txsql.errors.<Name>``, where users import it, not as the
# module that defines it: an error raised in a Spark worker reaches the driver as traceback
# text, which txsql/engine/failures.py recognises by that prefix; tracebacks, reprs and
# pickles name it the same way.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
