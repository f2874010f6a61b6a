"""Delta actions -> JSON wire objects: the writers, each field under its camelCase name.

Optional fields that are ``None`` are left out, and the unknown fields a reader kept in
``extra`` are written back (never over a field we model). Every dict handed out is
fresh, so a caller editing the wire form cannot change a frozen action.
:mod:`txsql.log.codec.checkpoint_rows` reuses ``_ENCODERS`` for checkpoint structs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.log.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CheckpointMetadata,
    CommitInfo,
    DomainMetadata,
    JsonDict,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    Sidecar,
)

# --- deletion vectors ------------------------------------------------------------------


def dv_to_json(d: DeletionVectorDescriptor) -> JsonDict:
    """Encode a DV descriptor; ``offset`` is omitted when absent (inline DVs).

    >>> dv_to_json(DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 2, 1))
    {'storageType': 'u', 'pathOrInlineDv': 'ab^-aqEH.-t@S}K{vb[*k^', 'offset': 1, 'sizeInBytes': 34, 'cardinality': 2}
    """  # noqa: E501
    out: JsonDict = {"storageType": d.storage_type, "pathOrInlineDv": d.path_or_inline_dv}
    if d.offset is not None:
        out["offset"] = d.offset
    out["sizeInBytes"] = d.size_in_bytes
    out["cardinality"] = d.cardinality
    return out


# --- actions -> JSON -------------------------------------------------------------------


def _present(o: JsonDict, extra: JsonDict | None) -> JsonDict:
    # None means "not written" for every optional field; unknown fields never override ours.
    out = {k: v for k, v in o.items() if v is not None}
    if extra:
        for k, v in extra.items():
            out.setdefault(k, v)
    return out


def _copy(d: dict[str, Any] | None) -> dict[str, Any] | None:
    # Fresh dicts, so a caller editing the wire form cannot mutate a frozen action.
    return None if d is None else dict(d)


def _add_to_json(a: AddFile) -> JsonDict:
    dv = a.deletion_vector
    o = {
        "path": a.path,
        "partitionValues": dict(a.partition_values),
        "size": a.size,
        "modificationTime": a.modification_time,
        "dataChange": a.data_change,
        "stats": a.stats,
        "tags": _copy(a.tags),
        "deletionVector": None if dv is None else dv_to_json(dv),
        "baseRowId": a.base_row_id,
        "defaultRowCommitVersion": a.default_row_commit_version,
        "clusteringProvider": a.clustering_provider,
    }
    return _present(o, a.extra)


def _remove_to_json(r: RemoveFile) -> JsonDict:
    dv = r.deletion_vector
    o = {
        "path": r.path,
        "deletionTimestamp": r.deletion_timestamp,
        "dataChange": r.data_change,
        "extendedFileMetadata": r.extended_file_metadata,
        "partitionValues": _copy(r.partition_values),
        "size": r.size,
        "stats": r.stats,
        "tags": _copy(r.tags),
        "deletionVector": None if dv is None else dv_to_json(dv),
        "baseRowId": r.base_row_id,
        "defaultRowCommitVersion": r.default_row_commit_version,
    }
    return _present(o, r.extra)


def _protocol_to_json(p: Protocol) -> JsonDict:
    rf, wf = p.reader_features, p.writer_features
    o = {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": None if rf is None else list(rf),
        "writerFeatures": None if wf is None else list(wf),
    }
    return _present(o, p.extra)


def _metadata_to_json(m: Metadata) -> JsonDict:
    o = {
        "id": m.id,
        "name": m.name,
        "description": m.description,
        "format": {"provider": m.format.provider, "options": dict(m.format.options)},
        "schemaString": m.schema_string,
        "partitionColumns": list(m.partition_columns),
        "configuration": dict(m.configuration),
        "createdTime": m.created_time,
    }
    return _present(o, m.extra)


def _cdc_to_json(c: AddCDCFile) -> JsonDict:
    o = {
        "path": c.path,
        "partitionValues": dict(c.partition_values),
        "size": c.size,
        "dataChange": c.data_change,
        "tags": _copy(c.tags),
    }
    return _present(o, c.extra)


def _txn_to_json(t: SetTransaction) -> JsonDict:
    o = {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated}
    return _present(o, t.extra)


def _domain_to_json(d: DomainMetadata) -> JsonDict:
    o = {"domain": d.domain, "configuration": d.configuration, "removed": d.removed}
    return _present(o, d.extra)


def _commit_info_to_json(c: CommitInfo) -> JsonDict:
    # Spark's field order, so our commits read like theirs.
    o = {
        "inCommitTimestamp": c.in_commit_timestamp,
        "timestamp": c.timestamp,
        "operation": c.operation,
        "operationParameters": _copy(c.operation_parameters),
        "readVersion": c.read_version,
        "isolationLevel": c.isolation_level,
        "isBlindAppend": c.is_blind_append,
        "operationMetrics": _copy(c.operation_metrics),
        "userMetadata": c.user_metadata,
        "engineInfo": c.engine_info,
        "txnId": c.txn_id,
    }
    return _present(o, c.extra)


def _checkpoint_metadata_to_json(c: CheckpointMetadata) -> JsonDict:
    return _present({"version": c.version, "tags": _copy(c.tags)}, c.extra)


def _sidecar_to_json(s: Sidecar) -> JsonDict:
    o = {
        "path": s.path,
        "sizeInBytes": s.size_in_bytes,
        "modificationTime": s.modification_time,
        "tags": _copy(s.tags),
    }
    return _present(o, s.extra)


_ENCODERS: dict[type, tuple[str, Callable[[Any], JsonDict]]] = {
    AddFile: ("add", _add_to_json),
    RemoveFile: ("remove", _remove_to_json),
    Metadata: ("metaData", _metadata_to_json),
    Protocol: ("protocol", _protocol_to_json),
    SetTransaction: ("txn", _txn_to_json),
    DomainMetadata: ("domainMetadata", _domain_to_json),
    CommitInfo: ("commitInfo", _commit_info_to_json),
    AddCDCFile: ("cdc", _cdc_to_json),
    CheckpointMetadata: ("checkpointMetadata", _checkpoint_metadata_to_json),
    Sidecar: ("sidecar", _sidecar_to_json),
}


def action_to_json(action: Action) -> JsonDict:
    """Encode an action as its one-key wire object (fresh dicts; safe to mutate).

    >>> action_to_json(Protocol(1, 2))
    {'protocol': {'minReaderVersion': 1, 'minWriterVersion': 2}}
    """
    name, encode = _ENCODERS[type(action)]
    return {name: encode(action)}
