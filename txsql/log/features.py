"""Protocol versions and table features: what txsql can read, write and create.

A reader that meets an unknown reader feature must refuse the table rather than return a
wrong answer; a writer must refuse any writer feature it does not implement. Legacy
(pre-feature) protocol versions imply fixed feature sets; those features only matter to a
writer when the table actually uses them (e.g. writer version 4 without CDF enabled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log import column_rules, properties
from txsql.log.actions import Metadata, Protocol
from txsql.log.schema import parse_schema

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

# Features that live in both lists of a version 3/7 protocol (PROTOCOL.md appendix).
READER_WRITER_FEATURES = frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
    | {"typeWidening", "typeWidening-preview", "variantType", "variantType-preview"}
    | {"variantShredding-preview", "catalogManaged", "catalogOwned-preview"}
)

# Only what the reader really handles: DVs, name/id column mapping on read, V2 checkpoints
# with sidecars, TIMESTAMP_NTZ columns, and vacuumProtocolCheck (a writer-side rule).
# typeWidening is absent: files may hold narrower types than the schema says.
READER_FEATURES_SUPPORTED = frozenset(
    {"deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck"}
)

# changeDataFeed: DELETE/UPDATE/MERGE write ``cdc`` files (txsql.engine.changes).
# Constraints, NOT NULL/invariants, generated, identity and default columns are enforced
# on every write (txsql.engine.write_rules).
WRITER_FEATURES_SUPPORTED = frozenset(
    {"appendOnly", "invariants", "deletionVectors", "timestampNtz", "domainMetadata"}
    | {"inCommitTimestamp", "changeDataFeed", "vacuumProtocolCheck"}
    | {"checkConstraints", "generatedColumns", "identityColumns", "allowColumnDefaults"}
)

_LEGACY_WRITER = (
    (2, ("appendOnly", "invariants")),
    (3, ("checkConstraints",)),
    (4, ("changeDataFeed", "generatedColumns")),
    (5, ("columnMapping",)),
    (6, ("identityColumns",)),
)


def reader_features(protocol: Protocol) -> frozenset[str]:
    """Reader features in force, including those a legacy reader version implies.

    >>> sorted(reader_features(Protocol(2, 5)))
    ['columnMapping']
    """
    if protocol.min_reader_version >= 3:
        return frozenset(protocol.reader_features or ())
    return frozenset({"columnMapping"}) if protocol.min_reader_version == 2 else frozenset()


def writer_features(protocol: Protocol) -> frozenset[str]:
    """Writer features in force (a writer-7 list, or the set a legacy version implies).

    >>> sorted(writer_features(Protocol(1, 4)))
    ['appendOnly', 'changeDataFeed', 'checkConstraints', 'generatedColumns', 'invariants']
    """
    if protocol.min_writer_version >= 7:
        return frozenset(protocol.writer_features or ())
    implied: set[str] = set()
    for version, names in _LEGACY_WRITER:
        if protocol.min_writer_version >= version:
            implied.update(names)
    return frozenset(implied)


def _refuse(what: str, names: Iterable[str], supported: Iterable[str], why: str = "") -> None:
    listed = ", ".join(sorted(names))
    raise UnsupportedFeatureError(
        f"this table needs {what} that txsql does not support: {listed}{why}",
        hint=f"txsql supports {', '.join(sorted(supported))}. "
        "Use an engine that supports the listed features (e.g. Delta Spark) for this table.",
    )


def check_readable(protocol: Protocol) -> None:
    """Refuse tables whose reader version or reader features txsql cannot honour.

    >>> check_readable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)))
    >>> check_readable(Protocol(3, 7, ("typeWidening",), ("typeWidening",)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    txsql.errors.UnsupportedFeatureError: this table needs reader features ...
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"this table needs reader version {protocol.min_reader_version}; "
            f"txsql reads versions up to {MAX_READER_VERSION}"
        )
    unsupported = reader_features(protocol) - READER_FEATURES_SUPPORTED
    if unsupported:
        _refuse("reader features", unsupported, READER_FEATURES_SUPPORTED)


def _unsupported_usage(metadata: Metadata) -> dict[str, str]:
    """Features the table *uses* that txsql cannot maintain on write, with the reason."""
    conf: Mapping[str, str] = metadata.configuration
    used: dict[str, str] = {}
    if properties.column_mapping_mode(conf) != "none":
        used["columnMapping"] = "txsql does not write physical column names yet"
    return used


# Columns a change-data-feed read adds; a CDF table may not have columns of these names.
CDC_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def check_cdc_columns(metadata: Metadata) -> None:
    """Refuse a CDF table whose top-level columns clash with the feed's own columns.

    Raises:
        SchemaError: CDF is on and the schema has ``_change_type`` and the like.
    """
    if not properties.change_data_feed_enabled(metadata.configuration):
        return
    names = {f.name.lower() for f in parse_schema(metadata.schema_string).fields}
    clash = [c for c in CDC_COLUMNS if c in names]
    if clash:
        raise SchemaError(
            f"a change data feed table cannot have columns named {', '.join(clash)} "
            "[DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS]",
            hint="Rename those columns, or leave delta.enableChangeDataFeed off.",
        )


def check_writable(protocol: Protocol, metadata: Metadata) -> None:
    """Refuse to write a table whose protocol or active features txsql cannot maintain.

    >>> m = Metadata("id", '{"type":"struct","fields":[]}')
    >>> check_writable(Protocol(1, 4), m)  # legacy CDF/generated columns, but unused
    """
    check_readable(protocol)
    check_cdc_columns(metadata)
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"this table needs writer version {protocol.min_writer_version}; "
            f"txsql writes versions up to {MAX_WRITER_VERSION}"
        )
    active = writer_features(protocol)
    # A writer-7 list is binding whether or not the table uses the feature; legacy
    # versions imply features that matter only when the metadata uses them.
    unknown = active - WRITER_FEATURES_SUPPORTED if protocol.min_writer_version >= 7 else set()
    usage = _unsupported_usage(metadata)
    names = set(unknown) | set(usage)
    if names:
        why = "".join(f"; {name}: {usage[name]}" for name in sorted(usage))
        _refuse("writer features", names, WRITER_FEATURES_SUPPORTED, why)


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


def protocol_for_new_table(configuration: Mapping[str, str]) -> Protocol:
    """The protocol txsql writes in version 0 for a table with these properties.

    >>> protocol_for_new_table({"delta.enableDeletionVectors": "true"})
    Protocol(min_reader_version=3, min_writer_version=7, reader_features=('deletionVectors',), writer_features=('deletionVectors',), extra=None)
    >>> protocol_for_new_table({})
    Protocol(min_reader_version=1, min_writer_version=2, reader_features=None, writer_features=None, extra=None)

    Raises:
        UnsupportedFeatureError: the properties ask for a feature txsql cannot write.
    """  # noqa: E501
    wanted: list[str] = []
    if properties.deletion_vectors_enabled(configuration):
        wanted.append("deletionVectors")
    if properties.in_commit_timestamps_enabled(configuration):
        wanted.append("inCommitTimestamp")
    if properties.change_data_feed_enabled(configuration):
        wanted.append("changeDataFeed")
    for key, value in configuration.items():
        # Explicit opt-ins: 'delta.feature.<name>' = 'supported'.
        if key.startswith("delta.feature.") and value.lower() in ("supported", "enabled"):
            wanted.append(key[len("delta.feature.") :])
    refused = {n for n in wanted if n not in WRITER_FEATURES_SUPPORTED}
    if properties.column_mapping_mode(configuration) != "none":
        refused.add("columnMapping")
    if refused:
        _refuse("features", refused, WRITER_FEATURES_SUPPORTED)
    if not wanted:
        return Protocol(1, 2)
    upgraded = with_features(Protocol(1, 1), writer=wanted)
    if properties.append_only(configuration):
        upgraded = with_features(upgraded, writer=["appendOnly"])
    return upgraded


def upgrade_for_metadata(protocol: Protocol, metadata: Metadata) -> Protocol:
    """``protocol`` plus the writer features ``metadata`` activates (CHECK constraints, NOT
    NULL, generated, identity and default columns); unchanged when it already has them.

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
    used = column_rules.features_used(metadata) - {"allowColumnDefaults"}
    return with_features(protocol, writer=sorted(used))


def upgrade_note(old: Protocol, new: Protocol) -> str:
    """A sentence naming the features an upgrade added ('' when nothing changed).

    >>> upgrade_note(Protocol(1, 2), Protocol(1, 7, None, ("appendOnly", "checkConstraints")))
    'protocol upgraded to writer version 7 with checkConstraints'
    """
    added = sorted(writer_features(new) - writer_features(old))
    if new == old or not added:
        return ""
    return f"protocol upgraded to writer version {new.min_writer_version} with {', '.join(added)}"
