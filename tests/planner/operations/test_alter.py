"""ALTER TABLE SET/UNSET TBLPROPERTIES, protocol upgrades, appendOnly, ADD COLUMNS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.errors import (
    InvalidTablePropertyError,
    SchemaError,
    TransactionError,
    UnsupportedFeatureError,
)
from txsql.log.deltalog import DeltaLog
from txsql.txn.guards import AppendOnlyTableError

pytestmark = [pytest.mark.spark]


@pytest.fixture()
def session(spark: Any, tmp_path: Path) -> txsql.Session:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE t (id INT, name STRING) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
    )
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    return s


def log_of(s: txsql.Session, name: str = "t") -> DeltaLog:
    return DeltaLog.for_path(str(Path(s.warehouse) / name))


def test_set_properties_canonicalises_and_stores_user_keys(session: txsql.Session) -> None:
    r = session.sql(
        "ALTER TABLE t SET TBLPROPERTIES ('DELTA.ISOLATIONLEVEL' = 'serializable', "
        "'delta.checkpointInterval' = '5', 'owner' = 'Data Team', "
        "'delta.logRetentionDuration' = 'interval 2 days')"
    )
    assert r.operation == "SET TBLPROPERTIES" and r.version == 2
    conf = log_of(session).snapshot().configuration
    assert conf["delta.isolationLevel"] == "Serializable"
    assert conf["delta.checkpointInterval"] == "5"
    assert conf["owner"] == "Data Team"
    assert conf["delta.logRetentionDuration"] == "interval 2 days"


@pytest.mark.parametrize(
    "pair",
    [
        "'delta.isolationLevel' = 'SnapshotIsolation'",
        "'delta.enableDeletionVectors' = 'maybe'",
        "'delta.checkpointInterval' = '0'",
        "'delta.logRetentionDuration' = 'forever'",
        "'delta.deletedFileRetentionDuration' = 'interval 1 month'",
        "'delta.appendonlyy' = 'true'",
        "'delta.noSuchKey' = '1'",
    ],
)
def test_invalid_properties_are_rejected(session: txsql.Session, pair: str) -> None:
    with pytest.raises(InvalidTablePropertyError):
        session.sql(f"ALTER TABLE t SET TBLPROPERTIES ({pair})")
    assert log_of(session).latest_version() == 1


def test_unset_properties(session: txsql.Session) -> None:
    session.sql(
        "ALTER TABLE t SET TBLPROPERTIES ('owner' = 'me', 'delta.checkpointInterval' = '3')"
    )
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('owner', 'DELTA.CHECKPOINTINTERVAL')")
    conf = log_of(session).snapshot().configuration
    assert "owner" not in conf and "delta.checkpointInterval" not in conf
    with pytest.raises(InvalidTablePropertyError, match="not set"):
        session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('owner')")
    version = log_of(session).latest_version()
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('owner')")
    assert log_of(session).latest_version() == (version or 0) + 1


def test_enabling_deletion_vectors_upgrades_protocol(session: txsql.Session) -> None:
    before = log_of(session).snapshot().protocol
    assert "deletionVectors" not in (before.reader_features or ())
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    snapshot = log_of(session).snapshot()
    assert (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version) == (3, 7)
    assert "deletionVectors" in (snapshot.protocol.reader_features or ())
    assert "deletionVectors" in (snapshot.protocol.writer_features or ())
    # Features the legacy writer version implied are kept in the explicit list.
    assert "appendOnly" in (snapshot.protocol.writer_features or ())
    root = str(Path(session.warehouse) / "t")
    assert duckdb_rows(root, 2, "id, name") == [(1, "a"), (2, "b")]
    assert deltalake_rows(root, 2, "id, name") == [(1, "a"), (2, "b")]
    # Unsetting does not downgrade the protocol.
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('delta.enableDeletionVectors')")
    assert log_of(session).snapshot().protocol == snapshot.protocol


def test_append_only_is_enforced(session: txsql.Session) -> None:
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    version = log_of(session).latest_version()
    session.sql("INSERT INTO t VALUES (3, 'c')")  # appends are fine
    for statement in (
        "INSERT OVERWRITE t SELECT 9, 'z'",
        "INSERT INTO t REPLACE WHERE id = 1 SELECT 1, 'x'",
        "RESTORE TABLE t TO VERSION AS OF 1",
    ):
        with pytest.raises(AppendOnlyTableError, match="append-only"):
            session.sql(statement)
    assert log_of(session).latest_version() == (version or 0) + 1
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    assert rows == [(1, "a"), (2, "b"), (3, "c")]
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'false')")
    session.sql("INSERT OVERWRITE t SELECT 9, 'z'")
    assert [tuple(r) for r in session.sql("SELECT * FROM t").df.collect()] == [(9, "z")]


def test_append_only_voids_explicit_transaction(session: txsql.Session) -> None:
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    version = log_of(session).latest_version()
    tx = session.begin()
    tx.sql("INSERT INTO t VALUES (4, 'd')")
    with pytest.raises(AppendOnlyTableError):
        tx.sql("INSERT OVERWRITE t SELECT 9, 'z'")
    with pytest.raises(TransactionError):
        tx.commit()
    assert log_of(session).latest_version() == version


def test_add_columns_old_files_read_null(session: txsql.Session) -> None:
    r = session.sql("ALTER TABLE t ADD COLUMNS (score DOUBLE COMMENT 'points', tag STRING)")
    assert r.operation == "ADD COLUMNS"
    session.sql("INSERT INTO t VALUES (3, 'c', 1.5, 'x')")
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM t").df.collect())
    assert rows == [(1, "a", None, None), (2, "b", None, None), (3, "c", 1.5, "x")]
    fields = log_of(session).snapshot().schema_json["fields"]
    assert [f["name"] for f in fields] == ["id", "name", "score", "tag"]
    assert fields[2]["metadata"] == {"comment": "points"} and fields[2]["type"] == "double"
    root = str(Path(session.warehouse) / "t")
    for reader in (duckdb_rows, deltalake_rows):
        assert sorted(reader(root, 3, "id, name, score, tag"), key=repr) == sorted(rows, key=repr)
    # Time travel to before the change still has the old schema.
    old = session.sql("SELECT * FROM t VERSION AS OF 1").df
    assert old.columns == ["id", "name"]


def test_add_timestamp_ntz_column_lists_its_feature_in_the_same_commit(
    session: txsql.Session,
) -> None:
    r = session.sql("ALTER TABLE t ADD COLUMNS (t TIMESTAMP_NTZ, s STRUCT<u: TIMESTAMP_NTZ>)")
    assert "timestampNtz" in r.message and "reader 3 / writer 7" in r.message
    root = Path(session.warehouse) / "t"
    commit = (root / "_delta_log" / f"{2:020d}.json").read_text()
    assert '"protocol"' in commit and '"metaData"' in commit  # one commit, both actions
    protocol = log_of(session).snapshot().protocol
    assert "timestampNtz" in (protocol.reader_features or ())
    assert {"appendOnly", "invariants", "timestampNtz"} <= set(protocol.writer_features or ())
    session.sql("INSERT INTO t VALUES (3, 'c', TIMESTAMP_NTZ'2024-01-01 00:00:01', NULL)")
    expected = [(1, "a", None), (2, "b", None), (3, "c", "2024-01-01 00:00:01")]
    assert duckdb_rows(str(root), 3, "id, name, CAST(t AS VARCHAR)") == expected
    assert deltalake_rows(str(root), 3, "id, name, t IS NULL") == [
        (1, "a", True),
        (2, "b", True),
        (3, "c", False),
    ]


def test_add_variant_column_lists_variant_type(session: txsql.Session) -> None:
    session.sql("ALTER TABLE t ADD COLUMNS (v VARIANT)")
    snapshot = log_of(session).snapshot()
    assert "variantType" in (snapshot.protocol.reader_features or ())
    assert "variantType" in (snapshot.protocol.writer_features or ())
    session.sql("""INSERT INTO t (id, v) VALUES (9, parse_json('{"k": [1, 2]}'))""")
    got = session.sql("SELECT variant_get(v, '$.k[1]', 'int') AS k FROM t WHERE id = 9")
    assert [r.k for r in got.collect()] == [2]


def test_a_table_missing_its_type_feature_is_refused_until_repaired(
    session: txsql.Session,
) -> None:
    # What txsql wrote before it listed timestampNtz: the column without the feature.
    session.sql("CREATE TABLE old (id INT, t TIMESTAMP_NTZ)")
    first = Path(session.warehouse) / "old" / "_delta_log" / f"{0:020d}.json"
    lines = first.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "protocol" in action:
            action["protocol"] = {"minReaderVersion": 1, "minWriterVersion": 2}
            lines[i] = json.dumps(action)
    first.write_text("\n".join(lines) + "\n")
    for crc in first.parent.glob("*.crc"):
        crc.unlink()
    with pytest.raises(UnsupportedFeatureError, match="'timestampNtz' table feature") as info:
        session.sql("INSERT INTO old VALUES (1, NULL)")
    assert "delta.feature.timestampNtz" in (info.value.hint or "")
    assert log_of(session, "old").latest_version() == 0
    r = session.sql("ALTER TABLE old SET TBLPROPERTIES ('owner' = 'me')")
    assert "timestampNtz" in r.message
    session.sql("INSERT INTO old VALUES (1, NULL)")
    assert duckdb_rows(str(first.parent.parent), 2, "id") == [(1,)]


@pytest.mark.parametrize("columns", ["(name STRING)", "(x INT, X STRING)", "(x INT NOT NULL)"])
def test_add_columns_errors(session: txsql.Session, columns: str) -> None:
    with pytest.raises(SchemaError):
        session.sql(f"ALTER TABLE t ADD COLUMNS {columns}")
    assert log_of(session).latest_version() == 1


def test_protocol_versions_upgrade_the_protocol_and_are_never_stored(
    session: txsql.Session,
) -> None:
    log = log_of(session)
    before = log.snapshot().protocol
    assert (before.min_reader_version, before.min_writer_version) == (1, 2)
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.minReaderVersion' = '1')")  # same
    snapshot = log.snapshot()
    assert snapshot.protocol == before
    assert "delta.minReaderVersion" not in snapshot.configuration
    version = log.latest_version()
    with pytest.raises(InvalidTablePropertyError, match="never downgraded"):
        session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.minWriterVersion' = '1')")
    with pytest.raises(InvalidTablePropertyError, match=r"minWriterVersion = 7"):
        session.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.minReaderVersion' = '3')")
    assert log.latest_version() == version
    session.sql(
        "ALTER TABLE t SET TBLPROPERTIES ('delta.minReaderVersion' = '3', "
        "'delta.minWriterVersion' = '7', 'owner' = 'ops')"
    )
    snapshot = log.snapshot()
    protocol = snapshot.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    # Legacy writer 2 implied these features; version 7 lists them.
    assert set(protocol.writer_features or ()) == {"appendOnly", "invariants"}
    assert protocol.reader_features == ()
    assert snapshot.configuration.get("owner") == "ops"
    assert not {"delta.minReaderVersion", "delta.minWriterVersion"} & set(snapshot.configuration)
    session.sql("INSERT INTO t VALUES (3, 'c')")
    latest = log.latest_version()
    assert latest is not None
    assert duckdb_rows(log.table_root, latest, "id, name") == [(1, "a"), (2, "b"), (3, "c")]


def test_create_with_protocol_versions(session: txsql.Session) -> None:
    session.sql(
        "CREATE TABLE p (id INT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false', "
        "'delta.minWriterVersion' = '4')"
    )
    snapshot = log_of(session, "p").snapshot()
    assert (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version) == (1, 4)
    assert "delta.minWriterVersion" not in snapshot.configuration
    # Writer 7 lists what writer 4 implied (checkConstraints, generatedColumns...): all
    # features txsql writes now (engine/write_rules.py enforces them).
    session.sql("ALTER TABLE p SET TBLPROPERTIES ('delta.minWriterVersion' = '7')")
    upgraded = log_of(session, "p").snapshot().protocol
    assert upgraded.min_writer_version == 7
    assert {"checkConstraints", "generatedColumns"} <= set(upgraded.writer_features or ())
    # Lower than what the table's features need: the features decide (no downgrade).
    session.sql("CREATE TABLE q (id INT) TBLPROPERTIES ('delta.minReaderVersion' = '1')")
    protocol = log_of(session, "q").snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    with pytest.raises(InvalidTablePropertyError):
        session.sql("CREATE TABLE r (id INT) TBLPROPERTIES ('delta.minWriterVersion' = '9')")
    assert not log_of(session, "r").exists()


def test_a_table_leaves_multi_table_transactions_only_when_none_is_prepared(
    session: txsql.Session,
) -> None:
    """Leaving changes the table's metadata, which would roll back a prepared transaction
    writing it at COMMIT PREPARED: the ALTER is refused while one is pending, by name."""
    s = session
    enrol = "TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
    s.sql(f"CREATE TABLE accounts (id INT, balance BIGINT) {enrol}")
    s.sql(f"CREATE TABLE ledger (id INT, amount BIGINT) {enrol}")
    s.sql("BEGIN; INSERT INTO accounts VALUES (1, 10); PREPARE TRANSACTION 'pay'")
    s.sql("BEGIN; INSERT INTO ledger VALUES (1, 10); PREPARE TRANSACTION 'book'")
    before = s.table("accounts").version()
    leave = "ALTER TABLE accounts SET TBLPROPERTIES ('txsql.multiTableTransactions' = 'false')"
    with pytest.raises(InvalidTablePropertyError, match="'pay'") as refused:
        s.sql(leave)
    assert "'book'" not in str(refused.value)
    assert "COMMIT PREPARED or ROLLBACK PREPARED" in refused.value.hint
    with pytest.raises(InvalidTablePropertyError, match="'pay'"):
        s.sql("ALTER TABLE accounts UNSET TBLPROPERTIES ('txsql.multiTableTransactions')")
    assert s.table("accounts").version() == before
    # Other property changes are not leaving; the prepared transaction still commits.
    s.commit_prepared("pay")
    accounts = str(Path(s.warehouse) / "accounts")
    assert deltalake_rows(accounts, before + 1, "id, balance") == [(1, 10)]
    s.sql(leave)  # nothing pending on accounts any more ('book' writes ledger only)
    conf = log_of(s, "accounts").snapshot().configuration
    assert conf["txsql.multiTableTransactions"] == "false"
    s.rollback_prepared("book")
    s.sql("ALTER TABLE ledger UNSET TBLPROPERTIES ('txsql.multiTableTransactions')")
    assert "txsql.multiTableTransactions" not in log_of(s, "ledger").snapshot().configuration
    assert duckdb_rows(str(Path(s.warehouse) / "ledger"), 1, "id") == []
