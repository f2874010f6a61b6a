"""JSON wire objects -> Delta actions: the readers, and the wire names each one models.

One ``{"<actionName>": {...}}`` object per action. Readers must ignore unknown action
types and unknown fields, and a read-modify-write must not lose the latter, so every
field a reader does not model (its ``_*_KEYS`` set below) lands in the action's ``extra``
dict, which :mod:`txsql.log.codec.actions_to_json` writes back verbatim.

The decoders run once per add in multi-million-file checkpoints, so they use plain dict
access and a C-level ``issuperset`` test to skip building ``extra`` in the common case.
:mod:`txsql.log.codec.checkpoint_rows` reuses ``_DECODERS`` for checkpoint structs.
"""

from __future__ import annotations

from collections.abc import Callable

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import CorruptLogError
from txsql.log.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CheckpointMetadata,
    CommitInfo,
    DomainMetadata,
    Format,
    JsonDict,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    Sidecar,
)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Wire names we model, per action; everything else is kept in ``extra``.
_ADD_KEYS = _names(
    "path partitionValues size modificationTime dataChange stats tags deletionVector "
    "baseRowId defaultRowCommitVersion clusteringProvider"
)
_REMOVE_KEYS = _names(
    "path deletionTimestamp dataChange extendedFileMetadata partitionValues size stats tags "
    "deletionVector baseRowId defaultRowCommitVersion"
)
_PROTOCOL_KEYS = _names("minReaderVersion minWriterVersion readerFeatures writerFeatures")
_METADATA_KEYS = _names(
    "id name description format schemaString partitionColumns configuration createdTime"
)
_CDC_KEYS = _names("path partitionValues size dataChange tags")
_TXN_KEYS = _names("appId version lastUpdated")
_DOMAIN_KEYS = _names("domain configuration removed")
_CKPT_META_KEYS = _names("version tags")
_SIDECAR_KEYS = _names("path sizeInBytes modificationTime tags")
_COMMIT_INFO_KEYS = _names(
    "timestamp operation operationParameters readVersion isolationLevel isBlindAppend "
    "operationMetrics engineInfo txnId inCommitTimestamp userMetadata"
)


def _extra(obj: JsonDict, known: frozenset[str]) -> JsonDict | None:
    if known.issuperset(obj):
        return None
    return {k: v for k, v in obj.items() if k not in known}


# --- deletion vectors ------------------------------------------------------------------


def dv_from_json(obj: JsonDict) -> DeletionVectorDescriptor:
    """Decode a ``deletionVector`` struct (``maxRowIndex`` is transient and dropped).

    >>> dv_from_json({"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40, "cardinality": 6}).offset is None
    True
    """  # noqa: E501
    return DeletionVectorDescriptor(
        obj["storageType"],
        obj["pathOrInlineDv"],
        obj["sizeInBytes"],
        obj["cardinality"],
        obj.get("offset"),
    )


# --- JSON -> actions -------------------------------------------------------------------


def _add(o: JsonDict) -> AddFile:
    dv = o.get("deletionVector")
    return AddFile(
        o["path"],
        o.get("partitionValues") or {},
        o["size"],
        o["modificationTime"],
        o.get("dataChange", True),
        o.get("stats"),
        o.get("tags"),
        None if dv is None else dv_from_json(dv),
        o.get("baseRowId"),
        o.get("defaultRowCommitVersion"),
        o.get("clusteringProvider"),
        _extra(o, _ADD_KEYS),
    )


def _remove(o: JsonDict) -> RemoveFile:
    dv = o.get("deletionVector")
    return RemoveFile(
        o["path"],
        o.get("deletionTimestamp"),
        o.get("dataChange", True),
        o.get("extendedFileMetadata"),
        o.get("partitionValues"),
        o.get("size"),
        o.get("stats"),
        o.get("tags"),
        None if dv is None else dv_from_json(dv),
        o.get("baseRowId"),
        o.get("defaultRowCommitVersion"),
        _extra(o, _REMOVE_KEYS),
    )


def _protocol(o: JsonDict) -> Protocol:
    rf = o.get("readerFeatures")
    wf = o.get("writerFeatures")
    return Protocol(
        o["minReaderVersion"],
        o["minWriterVersion"],
        None if rf is None else tuple(rf),
        None if wf is None else tuple(wf),
        _extra(o, _PROTOCOL_KEYS),
    )


def _metadata(o: JsonDict) -> Metadata:
    fmt = o.get("format") or {}
    return Metadata(
        id=o["id"],
        schema_string=o["schemaString"],
        partition_columns=tuple(o.get("partitionColumns") or ()),
        configuration=o.get("configuration") or {},
        format=Format(fmt.get("provider") or "parquet", fmt.get("options") or {}),
        name=o.get("name"),
        description=o.get("description"),
        created_time=o.get("createdTime"),
        extra=_extra(o, _METADATA_KEYS),
    )


def _cdc(o: JsonDict) -> AddCDCFile:
    return AddCDCFile(
        o["path"],
        o.get("partitionValues") or {},
        o["size"],
        o.get("dataChange", False),
        o.get("tags"),
        _extra(o, _CDC_KEYS),
    )


def _txn(o: JsonDict) -> SetTransaction:
    return SetTransaction(o["appId"], o["version"], o.get("lastUpdated"), _extra(o, _TXN_KEYS))


def _domain(o: JsonDict) -> DomainMetadata:
    return DomainMetadata(
        o["domain"], o["configuration"], bool(o.get("removed", False)), _extra(o, _DOMAIN_KEYS)
    )


def _commit_info(o: JsonDict) -> CommitInfo:
    return CommitInfo(
        timestamp=o.get("timestamp"),
        operation=o.get("operation"),
        operation_parameters=o.get("operationParameters"),
        read_version=o.get("readVersion"),
        isolation_level=o.get("isolationLevel"),
        is_blind_append=o.get("isBlindAppend"),
        operation_metrics=o.get("operationMetrics"),
        engine_info=o.get("engineInfo"),
        txn_id=o.get("txnId"),
        in_commit_timestamp=o.get("inCommitTimestamp"),
        user_metadata=o.get("userMetadata"),
        extra=_extra(o, _COMMIT_INFO_KEYS),
    )


def _checkpoint_metadata(o: JsonDict) -> CheckpointMetadata:
    return CheckpointMetadata(o["version"], o.get("tags"), _extra(o, _CKPT_META_KEYS))


def _sidecar(o: JsonDict) -> Sidecar:
    return Sidecar(
        o["path"],
        o["sizeInBytes"],
        o["modificationTime"],
        o.get("tags"),
        _extra(o, _SIDECAR_KEYS),
    )


_DECODERS: dict[str, Callable[[JsonDict], Action]] = {
    "add": _add,
    "remove": _remove,
    "metaData": _metadata,
    "protocol": _protocol,
    "txn": _txn,
    "domainMetadata": _domain,
    "commitInfo": _commit_info,
    "cdc": _cdc,
    "checkpointMetadata": _checkpoint_metadata,
    "sidecar": _sidecar,
}


def action_from_json(obj: JsonDict) -> Action | None:
    """Decode one parsed log line; ``None`` for action types readers must ignore.

    Raises:
        CorruptLogError: a known action lacks a required field or has the wrong shape.

    >>> action_from_json({"txn": {"appId": "job", "version": 3}})
    SetTransaction(app_id='job', version=3, last_updated=None, extra=None)
    >>> action_from_json({"someFutureAction": {}}) is None
    True
    """
    for name, body in obj.items():
        decode = _DECODERS.get(name)
        if decode is None:
            continue
        try:
            return decode(body)
        except (KeyError, TypeError, AttributeError) as exc:
            raise CorruptLogError(f"malformed {name!r} action: {exc!r} in {body!r:.200}") from exc
    return None
