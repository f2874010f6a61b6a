"""Protocol versions and table features: what txsql can read, write and create.

A reader that meets an unknown reader feature must refuse the table rather than return a
wrong answer; a writer must refuse any writer feature it does not implement. Legacy
(pre-feature) protocol versions imply fixed feature sets; those features only matter to a
writer when the table actually uses them (e.g. writer version 4 without CDF enabled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from txsql.errors import SchemaError, UnsupportedFeatureError
from txsql.log import iceberg_compat, properties
from txsql.log.actions import Metadata, Protocol
from txsql.log.schema import StructType, parse_schema
from txsql.log.type_features import (
    check_storable,
    needed_features,
    readable_schema,
    void_columns,
)

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

CATALOG_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})  # Delta's RFC
# Features that live in both lists of a version 3/7 protocol (PROTOCOL.md appendix).
READER_WRITER_FEATURES = CATALOG_FEATURES | frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
    | {"typeWidening", "typeWidening-preview", "variantType", "variantType-preview"}
    | {"variantShredding", "variantShredding-preview"}
)

# Only what the reader really handles: DVs, name/id column mapping on read, V2 checkpoints
# with sidecars, TIMESTAMP_NTZ columns, vacuumProtocolCheck (a writer-side rule), widened
# types (old files read at the new type: txsql.engine.schema, txsql.log.type_widening) and
# VARIANT columns, shredded or not (Spark 4.1's Parquet reader reassembles both).
READER_FEATURES_SUPPORTED = frozenset(
    {"deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck"}
    | {"typeWidening", "typeWidening-preview", "variantType", "variantType-preview"}
    | {"variantShredding", "variantShredding-preview"}
)

# changeDataFeed: DELETE/UPDATE/MERGE write ``cdc`` files (txsql.engine.changes).
# Constraints, NOT NULL/invariants, generated, identity and default columns are enforced
# on every write (txsql.engine.write_rules). VARIANT columns are written unshredded with
# no min/max stats (txsql.log.type_features); deltalake lists variantType on every DV table.
WRITER_FEATURES_SUPPORTED = frozenset(
    {"appendOnly", "invariants", "deletionVectors", "timestampNtz", "domainMetadata"}
    | {"inCommitTimestamp", "changeDataFeed", "vacuumProtocolCheck", "columnMapping"}
    | {"checkConstraints", "generatedColumns", "identityColumns", "allowColumnDefaults"}
    | {"txsqlMultiTableTransactions", "rowTracking", "variantType", "variantType-preview"}
    | {"v2Checkpoint", "typeWidening", "typeWidening-preview", "collations", "collations-preview"}
    | {"variantShredding", "variantShredding-preview"}  # written unshredded: always allowed
    | {"clustering"}  # the domain is kept, new files carry no clusteringProvider
    | {"materializePartitionColumns"}  # txsql.engine.write keeps them in the files
    | {"icebergCompatV2"}  # its rules: txsql.log.iceberg_compat
)

# Enrolment in txsql's multi-table transactions (txsql.txn.multitable.coordinator). The
# property turns it on; the writer-only feature makes writers that do not know it
# (deltalake, Delta Spark) refuse to commit behind the coordinator's back (writer-only).
MULTI_TABLE_PROPERTY = "txsql.multiTableTransactions"
MULTI_TABLE_FEATURE = "txsqlMultiTableTransactions"


def multi_table_enrolled(configuration: Mapping[str, str]) -> bool:
    """Whether the table commits through the multi-table coordinator.

    >>> multi_table_enrolled({"txsql.multiTableTransactions": "TRUE"})
    True
    """
    return configuration.get(MULTI_TABLE_PROPERTY, "").strip().lower() == "true"


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


def refuse_features(
    what: str, names: Iterable[str], supported: Iterable[str], why: str = ""
) -> None:
    listed = ", ".join(sorted(names))
    raise UnsupportedFeatureError(
        f"this table needs {what} that txsql does not support: {listed}{why}",
        hint=f"txsql supports {', '.join(sorted(supported))}. "
        "Use an engine that supports the listed features (e.g. Delta Spark) for this table.",
    )


def check_readable(protocol: Protocol) -> None:
    """Refuse tables whose reader version or reader features txsql cannot honour.

    >>> check_readable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)))
    >>> geo = ("geospatial",)
    >>> check_readable(Protocol(3, 7, geo, geo))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    txsql.errors.UnsupportedFeatureError: this table needs reader features ...
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"this table needs reader version {protocol.min_reader_version}; "
            f"txsql reads versions up to {MAX_READER_VERSION}"
        )
    unsupported = reader_features(protocol) - READER_FEATURES_SUPPORTED
    owned = sorted(unsupported & CATALOG_FEATURES)
    if owned:
        raise UnsupportedFeatureError(
            f"a catalog owns this table's commits ({', '.join(owned)}): the log alone may "
            "miss its newest commits, and a commit written there would bypass the catalog",
            hint="Use this table through its catalog (Delta Spark, Databricks).",
        )
    if unsupported:
        refuse_features("reader features", unsupported, READER_FEATURES_SUPPORTED)


def check_snapshot_readable(protocol: Protocol, metadata: Metadata) -> StructType | None:
    """:func:`check_readable`, and refuse a schema txsql cannot read (a geospatial column,
    an unknown type, a type change or collation it cannot map), naming the column first.

    Returns:
        The parsed schema (None when it does not parse: a scan reports that, naming the
        column; the log itself, its history and versions, stays readable).
    """
    schema = readable_schema(metadata.schema_string)
    check_readable(protocol)
    return schema


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


def materializes_partitions(
    protocol: Protocol | None, configuration: Mapping[str, str] | None = None
) -> bool:
    """Whether new data files must also hold the partition columns (the feature, or the
    rules of icebergCompatV2).

    >>> materializes_partitions(Protocol(3, 7, (), ("materializePartitionColumns",)))
    True
    >>> materializes_partitions(None, {"delta.enableIcebergCompatV2": "true"})
    True
    """
    if configuration is not None and iceberg_compat.active(configuration):
        return True
    return protocol is not None and "materializePartitionColumns" in writer_features(protocol)


def check_writable(
    protocol: Protocol, metadata: Metadata, *, existing: Metadata | None = None
) -> None:
    """Refuse to write a table whose protocol or active features txsql cannot maintain.

    ``existing``: the table's metadata before this write (None for a new table). A VOID
    column it already has is written as Delta Spark does (no Parquet column, always NULL);
    a new one is refused.

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
    if unknown:
        refuse_features("writer features", set(unknown), WRITER_FEATURES_SUPPORTED)
    kept = parse_schema(existing.schema_string) if existing is not None else None
    check_schema_features(protocol, metadata, void_columns(kept) if kept else frozenset())
    iceberg_compat.check(metadata, existing)


def check_schema_features(
    protocol: Protocol, metadata: Metadata, existing_void: frozenset[str] = frozenset()
) -> None:
    """Refuse a schema with a type txsql cannot store, or whose types need a table feature
    the protocol does not list (other readers refuse such a table; Delta Spark calls it
    DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH).

    >>> m = Metadata("id", '{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz",'
    ...     '"nullable":true,"metadata":{}}]}')
    >>> check_schema_features(Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)), m)
    >>> check_schema_features(Protocol(1, 2), m)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    txsql.errors.UnsupportedFeatureError: column t (TIMESTAMP_NTZ) needs the 'timestampNtz' ...
    """
    schema = parse_schema(metadata.schema_string)
    check_storable(schema, existing_void)
    readers, writers = reader_features(protocol), writer_features(protocol)
    for feature, column in sorted(needed_features(schema).items()):
        # Tables from a feature's preview era list it as '<name>-preview'.
        listed = any(
            name in writers and (name in readers or name not in READER_WRITER_FEATURES)
            for name in (feature, f"{feature}-preview")
        )
        if not listed:
            raise UnsupportedFeatureError(
                f"column {column} needs the '{feature}' table feature, which the table's "
                "protocol does not list; other readers (DuckDB, deltalake, Delta Spark) "
                "refuse such a table",
                hint=f"Add the feature: ALTER TABLE <table> SET TBLPROPERTIES "
                f"('delta.feature.{feature}' = 'supported').",
            )
