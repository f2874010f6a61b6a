"""Upgrading a protocol: the features new tables, table properties and metadata changes need.

CREATE TABLE, ALTER TABLE ... SET TBLPROPERTIES, REPLACE, RESTORE, CLONE and schema changes
all turn what they ask for into table features here, and upgrade the protocol the way
Delta does (reader-writer features land in both lists; a legacy writer version moving to 7
lists the features it implied).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from txsql.log import column_rules, properties, row_tracking
from txsql.log.actions import Metadata, Protocol
from txsql.log.features import (
    MULTI_TABLE_FEATURE,
    READER_WRITER_FEATURES,
    WRITER_FEATURES_SUPPORTED,
    multi_table_enrolled,
    reader_features,
    refuse_features,
    writer_features,
)
from txsql.log.schema import parse_schema
from txsql.log.type_features import needed_features


def with_features(
    protocol: Protocol, reader: Iterable[str] = (), writer: Iterable[str] = ()
) -> Protocol:
    """Upgrade ``protocol`` so it lists the given features (returned unchanged if present).

    Reader-writer features land in both lists. Moving a legacy writer version to 7 lists
    the features it implied, so nothing the table had is dropped.

    >>> with_features(Protocol(1, 2), writer=["inCommitTimestamp"])
    Protocol(min_reader_version=1, min_writer_version=7, reader_features=None, writer_features=('appendOnly', 'inCommitTimestamp', 'invariants'), extra=None)
    >>> with_features(Protocol(1, 2), writer=["deletionVectors"]).reader_features
    ('deletionVectors',)
    """  # noqa: E501
    wanted = [*reader, *writer]
    new_reader = {n for n in wanted if n in READER_WRITER_FEATURES} - reader_features(protocol)
    new_writer = set(wanted) - writer_features(protocol)
    if not new_reader and not new_writer:
        return protocol
    all_writer = writer_features(protocol) | set(wanted)
    reader_list = protocol.reader_features
    reader_version = protocol.min_reader_version
    if new_reader or reader_version >= 3:
        reader_version = 3
        reader_list = tuple(sorted(reader_features(protocol) | new_reader))
    return Protocol(
        reader_version,
        7,
        reader_list,
        tuple(sorted(all_writer)),
        protocol.extra,
    )


# Properties that switch on a table feature when true (refused below if txsql cannot write it).
_PROPERTY_FEATURES = {
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}


def features_for_properties(configuration: Mapping[str, str]) -> list[str]:
    """The table features these table properties turn on: the one list CREATE TABLE and
    ALTER TABLE ... SET TBLPROPERTIES both use.

    Raises:
        UnsupportedFeatureError: the properties ask for a feature txsql cannot write.
    """
    wanted: list[str] = []
    if properties.deletion_vectors_enabled(configuration):
        wanted.append("deletionVectors")
    if properties.in_commit_timestamps_enabled(configuration):
        wanted.append("inCommitTimestamp")
    if properties.change_data_feed_enabled(configuration):
        wanted.append("changeDataFeed")
    if properties.append_only(configuration):
        wanted.append("appendOnly")
    if row_tracking.enabled(configuration):
        wanted += ["rowTracking", "domainMetadata"]  # the mark lives in a domain
    if configuration.get(properties.P.CHECKPOINT_POLICY, "").strip().lower() == "v2":
        wanted.append("v2Checkpoint")
    for key, value in configuration.items():
        # Explicit opt-ins: 'delta.feature.<name>' = 'supported'.
        if key.startswith("delta.feature.") and value.lower() in ("supported", "enabled"):
            wanted.append(key[len("delta.feature.") :])
    for key, feature in _PROPERTY_FEATURES.items():
        # Stored without its feature, the property would make Delta refuse the table.
        if configuration.get(key, "").strip().lower() == "true":
            wanted.append(feature)
    refused = {n for n in wanted if n not in WRITER_FEATURES_SUPPORTED}
    if properties.column_mapping_mode(configuration) in ("name", "id"):
        wanted.append("columnMapping")
    if refused:
        refuse_features("features", refused, WRITER_FEATURES_SUPPORTED)
    return wanted


def protocol_for_new_table(configuration: Mapping[str, str]) -> Protocol:
    """The protocol txsql writes in version 0 for a table with these properties: legacy
    versions (1, 2) when nothing beyond appendOnly (which writer version 2 has) is wanted.

    >>> protocol_for_new_table({"delta.enableDeletionVectors": "true"})
    Protocol(min_reader_version=3, min_writer_version=7, reader_features=('deletionVectors',), writer_features=('deletionVectors',), extra=None)
    >>> protocol_for_new_table({"delta.appendOnly": "true"})
    Protocol(min_reader_version=1, min_writer_version=2, reader_features=None, writer_features=None, extra=None)

    Raises:
        UnsupportedFeatureError: the properties ask for a feature txsql cannot write.
    """  # noqa: E501
    wanted = features_for_properties(configuration)
    if all(name == "appendOnly" for name in wanted):
        return Protocol(1, 2)
    return with_features(Protocol(1, 1), writer=wanted)


def upgrade_for_metadata(protocol: Protocol, metadata: Metadata) -> Protocol:
    """``protocol`` plus the features ``metadata`` activates (CHECK constraints, NOT NULL,
    generated, identity and default columns, and column types such as TIMESTAMP_NTZ);
    unchanged when it already has them.

    Delta adds these features automatically when a metadata change needs them, except
    ``allowColumnDefaults``, which must be asked for (the caller checks that first).

    >>> import json
    >>> m = Metadata("id", json.dumps({"type": "struct", "fields": []}),
    ...              configuration={"delta.constraints.c": "true"})
    >>> upgrade_for_metadata(Protocol(1, 2), m).writer_features
    ('appendOnly', 'checkConstraints', 'invariants')
    >>> upgrade_for_metadata(Protocol(1, 3), m)
    Protocol(min_reader_version=1, min_writer_version=3, reader_features=None, writer_features=None, extra=None)
    """  # noqa: E501
    used = set(column_rules.features_used(metadata)) - {"allowColumnDefaults"}
    if multi_table_enrolled(metadata.configuration):
        used.add(MULTI_TABLE_FEATURE)
    # Column types too (TIMESTAMP_NTZ anywhere in the schema needs timestampNtz).
    used |= set(needed_features(parse_schema(metadata.schema_string)))
    if "collations" in used:
        used.add("domainMetadata")  # the feature depends on it (Delta's kernels add both)
    # A table from a feature's preview era keeps its '<name>-preview' listing.
    used = {name for name in used if f"{name}-preview" not in writer_features(protocol)}
    return with_features(protocol, writer=sorted(used))


def upgrade_note(old: Protocol, new: Protocol) -> str:
    """A sentence saying what an upgrade did ('' when nothing changed), for result messages.

    >>> upgrade_note(Protocol(1, 2), Protocol(1, 7, None, ("appendOnly", "checkConstraints")))
    'protocol upgraded from reader 1 / writer 2 to reader 1 / writer 7 (features: checkConstraints)'
    """
    if new == old:
        return ""
    added = sorted(writer_features(new) - writer_features(old))
    listed = f" (features: {', '.join(added)})" if added else ""
    return (
        f"protocol upgraded from reader {old.min_reader_version} / writer "
        f"{old.min_writer_version} to reader {new.min_reader_version} / writer "
        f"{new.min_writer_version}{listed}"
    )


def type_features_note(protocol: Protocol, metadata: Metadata) -> str:
    """For a new table: which features its column types made the protocol list ('' if none).

    >>> m = Metadata("id", '{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz",'
    ...     '"nullable":true,"metadata":{}}]}')
    >>> type_features_note(Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)), m)
    'table feature timestampNtz for column t (TIMESTAMP_NTZ); protocol reader 3 / writer 7'
    """
    needed = needed_features(parse_schema(metadata.schema_string))
    if not needed:
        return ""
    listed = "; ".join(f"table feature {f} for column {c}" for f, c in sorted(needed.items()))
    return (
        f"{listed}; protocol reader {protocol.min_reader_version} / writer "
        f"{protocol.min_writer_version}"
    )
