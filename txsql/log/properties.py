"""Delta table properties (``metaData.configuration``): names, defaults, typed getters.

Keys and defaults follow Delta Spark's ``DeltaConfigs`` except where txsql deliberately
differs (``delta.isolationLevel`` defaults to ``WriteSerializable``, as on Databricks).
``_DEFAULT`` is what an *absent* key means; txsql's CREATE TABLE additionally sets
:data:`NEW_TABLE_DEFAULTS` so new tables get deletion vectors.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping

from txsql.errors import InvalidTablePropertyError
from txsql.log import iceberg_compat


class TableProperties:
    """Property keys (``delta.*``) and the value an absent key stands for."""

    ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
    ENABLE_DELETION_VECTORS_DEFAULT = "false"
    CHECKPOINT_INTERVAL = "delta.checkpointInterval"
    CHECKPOINT_INTERVAL_DEFAULT = "10"
    ISOLATION_LEVEL = "delta.isolationLevel"
    ISOLATION_LEVEL_DEFAULT = "WriteSerializable"
    APPEND_ONLY = "delta.appendOnly"
    APPEND_ONLY_DEFAULT = "false"
    LOG_RETENTION_DURATION = "delta.logRetentionDuration"
    LOG_RETENTION_DURATION_DEFAULT = "interval 30 days"
    DELETED_FILE_RETENTION_DURATION = "delta.deletedFileRetentionDuration"
    DELETED_FILE_RETENTION_DURATION_DEFAULT = "interval 1 week"
    CHECKPOINT_RETENTION_DURATION = "delta.checkpointRetentionDuration"
    CHECKPOINT_RETENTION_DURATION_DEFAULT = "interval 2 days"
    ENABLE_IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
    ENABLE_IN_COMMIT_TIMESTAMPS_DEFAULT = "false"
    IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
    IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION_DEFAULT = None
    IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
    IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP_DEFAULT = None
    COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
    COLUMN_MAPPING_MODE_DEFAULT = "none"
    DATA_SKIPPING_NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
    DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT = "32"
    DATA_SKIPPING_STATS_COLUMNS = "delta.dataSkippingStatsColumns"
    DATA_SKIPPING_STATS_COLUMNS_DEFAULT = None
    SET_TRANSACTION_RETENTION_DURATION = "delta.setTransactionRetentionDuration"
    SET_TRANSACTION_RETENTION_DURATION_DEFAULT = None
    ENABLE_CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
    ENABLE_CHANGE_DATA_FEED_DEFAULT = "false"
    RANDOMIZE_FILE_PREFIXES = "delta.randomizeFilePrefixes"
    RANDOMIZE_FILE_PREFIXES_DEFAULT = "false"
    CHECKPOINT_POLICY = "delta.checkpointPolicy"
    CHECKPOINT_POLICY_DEFAULT = "classic"
    CHECKPOINT_WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
    CHECKPOINT_WRITE_STATS_AS_JSON_DEFAULT = "true"
    # The protocol's default; Delta Spark defaults to true, so Spark-made checkpoints of
    # tables without the key still carry ``stats_parsed``.
    CHECKPOINT_WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
    CHECKPOINT_WRITE_STATS_AS_STRUCT_DEFAULT = "false"


P = TableProperties

NEW_TABLE_DEFAULTS: dict[str, str] = {P.ENABLE_DELETION_VECTORS: "true"}
"""Properties txsql's CREATE TABLE sets unless the statement says otherwise."""

ISOLATION_LEVELS = ("Serializable", "WriteSerializable")

_MS = {"microsecond": 0.001, "millisecond": 1, "second": 1000, "minute": 60_000}
_MS |= {"hour": 3_600_000, "day": 86_400_000, "week": 604_800_000}
_INTERVAL_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a Spark CalendarInterval string as Delta's retention keys use them.

    Months and years are refused, as in Delta: their length in ms is not fixed.

    >>> parse_interval_ms("interval 1 week"), parse_interval_ms("7 days")
    (604800000, 604800000)
    >>> parse_interval_ms("interval 1 day 12 hours")
    129600000

    Raises:
        InvalidTablePropertyError: not an interval, negative, or in months/years.
    """
    body = text.strip().lower()
    body = body[len("interval") :] if body.startswith("interval") else body
    total = 0.0
    pos = 0
    while pos < len(body.rstrip()):
        m = _INTERVAL_PART.match(body, pos)
        unit = m.group(2).removesuffix("s") if m else ""
        if m is None or unit not in _MS:
            raise InvalidTablePropertyError(
                f"{text!r} is not a valid interval",
                hint="Write e.g. 'interval 7 days', 'interval 1 week' or 'interval 12 hours' "
                "(weeks, days, hours, minutes, seconds, milliseconds).",
            )
        total += float(m.group(1)) * _MS[unit]
        pos = m.end()
    if pos == 0:
        raise InvalidTablePropertyError(f"{text!r} is not a valid interval: it has no duration")
    return int(total)


# --- validation ------------------------------------------------------------------------


def _bool(value: str) -> str:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered


def _int_at_least(minimum: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        number = int(value.strip())
        if number < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return str(number)

    return check


def _interval(value: str) -> str:
    parse_interval_ms(value)
    return value.strip()


def _fraction(value: str) -> str:
    number = float(value.strip())
    if not 0.0 <= number <= 1.0:
        raise ValueError("expected a fraction from 0 to 1")
    return value.strip()


def _one_of(*choices: str) -> Callable[[str], str]:
    by_lower = {c.lower(): c for c in choices}

    def check(value: str) -> str:
        try:
            return by_lower[value.strip().lower()]
        except KeyError:
            raise ValueError(f"expected one of {', '.join(choices)}") from None

    return check


def _any(value: str) -> str:
    return value


_VALIDATORS: dict[str, Callable[[str], str]] = {
    P.ENABLE_DELETION_VECTORS: _bool,
    P.CHECKPOINT_INTERVAL: _int_at_least(1),
    P.ISOLATION_LEVEL: _one_of(*ISOLATION_LEVELS),
    P.APPEND_ONLY: _bool,
    P.LOG_RETENTION_DURATION: _interval,
    P.DELETED_FILE_RETENTION_DURATION: _interval,
    P.CHECKPOINT_RETENTION_DURATION: _interval,
    P.ENABLE_IN_COMMIT_TIMESTAMPS: _bool,
    P.IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION: _int_at_least(0),
    P.IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP: _int_at_least(0),
    P.COLUMN_MAPPING_MODE: _one_of("none", "name", "id"),
    P.DATA_SKIPPING_NUM_INDEXED_COLS: _int_at_least(-1),
    P.DATA_SKIPPING_STATS_COLUMNS: _any,
    P.SET_TRANSACTION_RETENTION_DURATION: _interval,
    P.ENABLE_CHANGE_DATA_FEED: _bool,
    P.RANDOMIZE_FILE_PREFIXES: _bool,
    P.CHECKPOINT_POLICY: _one_of("classic", "v2"),
    P.CHECKPOINT_WRITE_STATS_AS_JSON: _bool,
    P.CHECKPOINT_WRITE_STATS_AS_STRUCT: _bool,
    # Keys other Delta engines write that txsql stores but does not interpret.
    "delta.minReaderVersion": _int_at_least(1),
    "delta.minWriterVersion": _int_at_least(1),
    "delta.columnMapping.maxColumnId": _int_at_least(0),
    "delta.dataSkippingStringPrefixLength": _int_at_least(0),
    "delta.enableExpiredLogCleanup": _bool,
    "delta.enableRowTracking": _bool,
    "delta.enableTypeWidening": _bool,
    "delta.randomPrefixLength": _int_at_least(1),
    "delta.targetFileSize": _any,
    "delta.tuneFileSizesForRewrites": _bool,
    "delta.autoOptimize.optimizeWrite": _bool,
    "delta.autoOptimize.autoCompact": _any,
    "delta.compatibility.symlinkFormatManifest.enabled": _bool,
    "delta.universalFormat.enabledFormats": _any,
    "delta.enableIcebergCompatV2": _bool,
    "delta.parquet.compression.codec": _any,
    # txsql's own settings: a misspelt one would be stored and silently ignored.
    "txsql.rowLevelConcurrency": _bool,
    "txsql.multiTableTransactions": _bool,
    "txsql.multiTableTransactions.coordinator": _any,
    "txsql.multiTableTransactions.coordinatorRetention": _interval,
    "txsql.maintenance": _bool,
    "txsql.maintenance.purgeThreshold": _fraction,
}
_BY_LOWER = {k.lower(): k for k in _VALIDATORS}
_FEATURE_PREFIX = "delta.feature."


def canonical_key(key: str) -> str:
    """Delta matches ``delta.*`` keys case-insensitively and stores its own spelling.

    >>> canonical_key("DELTA.appendonly"), canonical_key("owner")
    ('delta.appendOnly', 'owner')
    """
    return _BY_LOWER.get(key.lower(), key)


def validate_property(key: str, value: str) -> str:
    """Check a property being set and return its canonical value.

    Keys without the ``delta.`` or ``txsql.`` prefix are user properties and pass unchanged.

    >>> validate_property("delta.isolationLevel", "serializable")
    'Serializable'
    >>> validate_property("comment.owner", "ops")
    'ops'

    Raises:
        InvalidTablePropertyError: an unknown ``delta.`` key or an invalid value.
    """
    prefix = key.lower().partition(".")[0]
    if prefix not in ("delta", "txsql"):
        return value
    if key.lower().startswith(_FEATURE_PREFIX):
        if value.strip().lower() not in ("supported", "enabled"):
            raise InvalidTablePropertyError(
                f"invalid value {value!r} for {key}", hint="Table feature keys take 'supported'."
            )
        return "supported"
    canonical = canonical_key(key)
    check = _VALIDATORS.get(canonical)
    if check is None:
        close = difflib.get_close_matches(canonical, list(_VALIDATORS), n=1, cutoff=0.5)
        close = close or difflib.get_close_matches(key.lower(), list(_BY_LOWER), n=1, cutoff=0.5)
        suggestion = f"Did you mean {canonical_key(close[0])}? " if close else ""
        raise InvalidTablePropertyError(
            f"unknown table property {key!r}",
            hint=f"{suggestion}Keys starting with '{prefix}.' are reserved for "
            f"{'Delta' if prefix == 'delta' else 'txsql'} settings; use another prefix for "
            "your own.",
        )
    try:
        return check(value)
    except (ValueError, InvalidTablePropertyError) as exc:
        detail = exc.message if isinstance(exc, InvalidTablePropertyError) else str(exc)
        raise InvalidTablePropertyError(
            f"invalid value {value!r} for table property {canonical}: {detail}",
            hint=f"Set '{canonical}' to a valid value ({detail}), or leave it out for its default.",
        ) from exc


# --- typed getters -----------------------------------------------------------------------


def _get(conf: Mapping[str, str], key: str, default: str) -> str:
    value = conf.get(key)
    if value is None:
        return default
    try:
        return _VALIDATORS[key](value)
    except (ValueError, InvalidTablePropertyError) as exc:
        raise InvalidTablePropertyError(
            f"table property {key}={value!r} is invalid",
            hint=f"Fix it with ALTER TABLE ... SET TBLPROPERTIES ('{key}' = '{default}').",
        ) from exc


def checkpoint_interval(conf: Mapping[str, str]) -> int:
    """Commits between checkpoints (``delta.checkpointInterval``, default 10).

    >>> checkpoint_interval({}), checkpoint_interval({"delta.checkpointInterval": "2"})
    (10, 2)
    """
    return int(_get(conf, P.CHECKPOINT_INTERVAL, P.CHECKPOINT_INTERVAL_DEFAULT))


def deletion_vectors_enabled(conf: Mapping[str, str]) -> bool:
    """Whether writers may create DVs (readers honour DVs regardless). Never while
    icebergCompatV2 is active: Iceberg V2 readers of the same files would not see them.

    >>> deletion_vectors_enabled({"delta.enableDeletionVectors": "true"})
    True
    >>> deletion_vectors_enabled({"delta.enableDeletionVectors": "true",
    ...                           "delta.enableIcebergCompatV2": "true"})
    False
    """
    if iceberg_compat.active(conf):
        return False
    return _get(conf, P.ENABLE_DELETION_VECTORS, P.ENABLE_DELETION_VECTORS_DEFAULT) == "true"


def isolation_level(conf: Mapping[str, str]) -> str:
    """Canonical ``Serializable`` or ``WriteSerializable`` (txsql's default).

    >>> isolation_level({"delta.isolationLevel": "SERIALIZABLE"}), isolation_level({})
    ('Serializable', 'WriteSerializable')
    """
    return _get(conf, P.ISOLATION_LEVEL, P.ISOLATION_LEVEL_DEFAULT)


def append_only(conf: Mapping[str, str]) -> bool:
    return _get(conf, P.APPEND_ONLY, P.APPEND_ONLY_DEFAULT) == "true"


def in_commit_timestamps_enabled(conf: Mapping[str, str]) -> bool:
    default = P.ENABLE_IN_COMMIT_TIMESTAMPS_DEFAULT
    return _get(conf, P.ENABLE_IN_COMMIT_TIMESTAMPS, default) == "true"


def in_commit_timestamp_enablement(conf: Mapping[str, str]) -> tuple[int, int] | None:
    """(version, timestamp ms) from which commit timestamps are in-commit, if recorded."""
    version = conf.get(P.IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION)
    timestamp = conf.get(P.IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP)
    if version is None or timestamp is None:
        return None
    return int(version), int(timestamp)


def change_data_feed_enabled(conf: Mapping[str, str]) -> bool:
    return _get(conf, P.ENABLE_CHANGE_DATA_FEED, P.ENABLE_CHANGE_DATA_FEED_DEFAULT) == "true"


def column_mapping_mode(conf: Mapping[str, str]) -> str:
    """``none``, ``name`` or ``id``."""
    return _get(conf, P.COLUMN_MAPPING_MODE, P.COLUMN_MAPPING_MODE_DEFAULT)


def checkpoint_policy(conf: Mapping[str, str]) -> str:
    """``classic`` or ``v2``."""
    return _get(conf, P.CHECKPOINT_POLICY, P.CHECKPOINT_POLICY_DEFAULT)


def checkpoint_stats_as_json(conf: Mapping[str, str]) -> bool:
    """Whether checkpoint ``add`` rows carry the ``stats`` JSON string.

    >>> checkpoint_stats_as_json({}), checkpoint_stats_as_json({P.CHECKPOINT_WRITE_STATS_AS_JSON: "False"})
    (True, False)
    """  # noqa: E501
    default = P.CHECKPOINT_WRITE_STATS_AS_JSON_DEFAULT
    return _get(conf, P.CHECKPOINT_WRITE_STATS_AS_JSON, default) == "true"


def checkpoint_stats_as_struct(conf: Mapping[str, str]) -> bool:
    """Whether checkpoint ``add`` rows carry the typed ``stats_parsed`` struct.

    >>> checkpoint_stats_as_struct({}), checkpoint_stats_as_struct({P.CHECKPOINT_WRITE_STATS_AS_STRUCT: "true"})
    (False, True)
    """  # noqa: E501
    default = P.CHECKPOINT_WRITE_STATS_AS_STRUCT_DEFAULT
    return _get(conf, P.CHECKPOINT_WRITE_STATS_AS_STRUCT, default) == "true"


def data_skipping_num_indexed_cols(conf: Mapping[str, str]) -> int:
    """Leading columns that get stats; -1 means all."""
    default = P.DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT
    return int(_get(conf, P.DATA_SKIPPING_NUM_INDEXED_COLS, default))


def log_retention_ms(conf: Mapping[str, str]) -> int:
    """How long commit files are kept before log cleanup (default 30 days)."""
    default = P.LOG_RETENTION_DURATION_DEFAULT
    return parse_interval_ms(_get(conf, P.LOG_RETENTION_DURATION, default))


def deleted_file_retention_ms(conf: Mapping[str, str]) -> int:
    """How long remove tombstones (and the files) are kept for VACUUM (default 1 week).

    >>> deleted_file_retention_ms({}) == 7 * 24 * 3600 * 1000
    True
    """
    default = P.DELETED_FILE_RETENTION_DURATION_DEFAULT
    return parse_interval_ms(_get(conf, P.DELETED_FILE_RETENTION_DURATION, default))


def checkpoint_retention_ms(conf: Mapping[str, str]) -> int:
    default = P.CHECKPOINT_RETENTION_DURATION_DEFAULT
    return parse_interval_ms(_get(conf, P.CHECKPOINT_RETENTION_DURATION, default))


def set_transaction_retention_ms(conf: Mapping[str, str]) -> int | None:
    """Expiry of ``txn`` app ids; ``None`` (the default) means they never expire."""
    value = conf.get(P.SET_TRANSACTION_RETENTION_DURATION)
    if value is None:
        return None
    return parse_interval_ms(_get(conf, P.SET_TRANSACTION_RETENTION_DURATION, value))
