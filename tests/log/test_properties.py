"""Table properties: intervals, validation and typed getters."""

from __future__ import annotations

import pytest

from txsql.errors import InvalidTablePropertyError
from txsql.log import properties as props
from txsql.log.properties import TableProperties, parse_interval_ms, validate_property

DAY = 86_400_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("interval 1 week", 7 * DAY),
        ("interval 30 days", 30 * DAY),
        ("7 days", 7 * DAY),
        ("interval 2 hours", 2 * 3_600_000),
        ("interval 1 day 12 hours", DAY + 12 * 3_600_000),
        ("INTERVAL 1 Day", DAY),
        ("interval 90 minutes", 90 * 60_000),
        ("interval 5 seconds 250 milliseconds", 5250),
        ("interval 0 days", 0),
    ],
)
def test_parse_interval(text: str, ms: int) -> None:
    assert parse_interval_ms(text) == ms


@pytest.mark.parametrize(
    "text", ["", "interval", "interval 1 month", "1 year", "soon", "-1 day", "interval 1 fortnight"]
)
def test_parse_interval_rejects(text: str) -> None:
    with pytest.raises(InvalidTablePropertyError):
        parse_interval_ms(text)


def test_defaults_from_empty_configuration() -> None:
    conf: dict[str, str] = {}
    assert props.checkpoint_interval(conf) == 10
    assert props.deletion_vectors_enabled(conf) is False
    assert props.isolation_level(conf) == "WriteSerializable"
    assert props.append_only(conf) is False
    assert props.in_commit_timestamps_enabled(conf) is False
    assert props.log_retention_ms(conf) == 30 * DAY
    assert props.deleted_file_retention_ms(conf) == 7 * DAY
    assert props.checkpoint_retention_ms(conf) == 2 * DAY
    assert props.set_transaction_retention_ms(conf) is None
    assert props.column_mapping_mode(conf) == "none"
    assert props.data_skipping_num_indexed_cols(conf) == 32
    assert props.checkpoint_policy(conf) == "classic"
    assert props.in_commit_timestamp_enablement(conf) is None
    assert TableProperties.CHECKPOINT_INTERVAL_DEFAULT == "10"


def test_getters_read_values() -> None:
    conf = {
        "delta.checkpointInterval": "2",
        "delta.enableDeletionVectors": "TRUE",
        "delta.isolationLevel": "serializable",
        "delta.appendOnly": "true",
        "delta.logRetentionDuration": "interval 2 days",
        "delta.deletedFileRetentionDuration": "interval 1 hour",
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "5",
        "delta.inCommitTimestampEnablementTimestamp": "1700000000000",
        "delta.setTransactionRetentionDuration": "interval 3 days",
        "delta.columnMapping.mode": "Name",
    }
    assert props.checkpoint_interval(conf) == 2
    assert props.deletion_vectors_enabled(conf) is True
    assert props.isolation_level(conf) == "Serializable"
    assert props.append_only(conf) is True
    assert props.log_retention_ms(conf) == 2 * DAY
    assert props.deleted_file_retention_ms(conf) == 3_600_000
    assert props.in_commit_timestamps_enabled(conf) is True
    assert props.in_commit_timestamp_enablement(conf) == (5, 1700000000000)
    assert props.set_transaction_retention_ms(conf) == 3 * DAY
    assert props.column_mapping_mode(conf) == "name"


def test_invalid_stored_value_is_a_clear_error() -> None:
    with pytest.raises(InvalidTablePropertyError, match=r"delta\.checkpointInterval"):
        props.checkpoint_interval({"delta.checkpointInterval": "often"})


@pytest.mark.parametrize(
    ("key", "value", "canonical"),
    [
        ("delta.isolationLevel", "WRITESERIALIZABLE", "WriteSerializable"),
        ("delta.isolationLevel", "Serializable", "Serializable"),
        ("delta.enableDeletionVectors", "True", "true"),
        ("delta.checkpointInterval", " 5 ", "5"),
        ("delta.logRetentionDuration", "interval 60 days", "interval 60 days"),
        ("delta.columnMapping.mode", "ID", "id"),
        ("delta.checkpointPolicy", "V2", "v2"),
        ("delta.dataSkippingNumIndexedCols", "-1", "-1"),
        ("delta.feature.deletionVectors", "enabled", "supported"),
        ("delta.targetFileSize", "33554432", "33554432"),
        ("DELTA.APPENDONLY", "false", "false"),
        ("owner", "anything at all", "anything at all"),
        ("TXSQL.MAINTENANCE", " FALSE", "false"),
        ("txsql.maintenance.purgeThreshold", "0.25", "0.25"),
        ("txsql.multiTableTransactions.coordinatorRetention", "interval 1 day", "interval 1 day"),
    ],
)
def test_validate_property_canonical(key: str, value: str, canonical: str) -> None:
    assert validate_property(key, value) == canonical


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("delta.isolationLevel", "SnapshotIsolation", "Serializable, WriteSerializable"),
        ("delta.checkpointInterval", "0", ">= 1"),
        ("delta.checkpointInterval", "ten", "delta.checkpointInterval"),
        ("delta.enableDeletionVectors", "yes", "true or false"),
        ("delta.logRetentionDuration", "forever", "not a valid interval"),
        ("delta.deletedFileRetentionDuration", "interval 1 month", "interval"),
        ("delta.columnMapping.mode", "physical", "none, name, id"),
        ("delta.feature.deletionVectors", "on", "supported"),
        ("txsql.maintenance", "off", "true or false"),
        ("txsql.maintenance.purgeThreshold", "10%", "txsql.maintenance.purgeThreshold"),
        ("txsql.maintenance.purgeThreshold", "1.5", "fraction from 0 to 1"),
        ("txsql.rowLevelConcurrency", "yes", "true or false"),
    ],
)
def test_validate_property_rejects_values(key: str, value: str, match: str) -> None:
    with pytest.raises(InvalidTablePropertyError, match=match):
        validate_property(key, value)


def test_unknown_delta_key_suggests_closest() -> None:
    with pytest.raises(InvalidTablePropertyError) as info:
        validate_property("delta.enableDeletionVector", "true")
    assert "delta.enableDeletionVector" in info.value.message
    assert "delta.enableDeletionVectors" in info.value.hint
    with pytest.raises(InvalidTablePropertyError, match="unknown table property"):
        validate_property("delta.checkpointIntervall", "5")


def test_canonical_key() -> None:
    assert props.canonical_key("delta.ENABLEDELETIONVECTORS") == "delta.enableDeletionVectors"
    assert props.NEW_TABLE_DEFAULTS == {"delta.enableDeletionVectors": "true"}


def test_unknown_txsql_key_is_refused_with_the_closest() -> None:
    """A misspelt txsql setting would be stored and silently ignored: refused instead."""
    with pytest.raises(InvalidTablePropertyError) as info:
        validate_property("txsql.maintenence", "false")
    assert "txsql.maintenance" in info.value.hint
    assert "reserved for txsql settings" in info.value.hint


def test_every_txsql_setting_txsql_reads_is_validated() -> None:
    from txsql.log.features import MULTI_TABLE_PROPERTY
    from txsql.planner.operations.maintenance import OPT_OUT_PROPERTY, THRESHOLD_PROPERTY
    from txsql.txn.isolation import ROW_LEVEL_CONCURRENCY
    from txsql.txn.multitable.compaction import RETENTION_PROPERTY
    from txsql.txn.multitable.coordinator import COORDINATOR_PROPERTY

    read = (MULTI_TABLE_PROPERTY, OPT_OUT_PROPERTY, THRESHOLD_PROPERTY, ROW_LEVEL_CONCURRENCY)
    for key in (*read, RETENTION_PROPERTY, COORDINATOR_PROPERTY):
        assert props.canonical_key(key.upper()) == key
