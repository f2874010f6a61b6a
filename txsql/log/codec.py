"""The Delta log wire format: the one place camelCase names meet the action dataclasses.

Commits are newline-delimited JSON, one ``{"<actionName>": {...}}`` object per line;
checkpoints are Parquet with one struct column per action type. Readers must ignore
unknown action types and unknown fields, and a read-modify-write must not lose the
latter, so every field we do not model lands in the action's ``extra`` dict and is
written back verbatim.

The decoders run once per add in multi-million-file checkpoints, so they use plain dict
access and a C-level ``issuperset`` test to skip building ``extra`` in the common case.

It stays one module over 400 lines on purpose: it is the one place where Delta's camelCase
names meet the dataclasses, for commits and checkpoints alike, so a field added to an
action is mapped (both ways, both formats) in one file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

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


# --- commit files ----------------------------------------------------------------------


def _where(source: str, line_no: int) -> str:
    return f"{source or '<commit>'} line {line_no}"


def decode_commit(data: bytes, *, source: str = "") -> list[Action]:
    """Decode a commit file (newline-delimited JSON); unknown action types are skipped.

    Raises:
        CorruptLogError: a line is not a JSON object (e.g. a truncated write) or a known
            action is malformed; the message names ``source`` and the 1-based line.

    >>> decode_commit(b'{"txn":{"appId":"a","version":1}}\\n\\n{"future":{}}\\n')
    [SetTransaction(app_id='a', version=1, last_updated=None, extra=None)]
    >>> try:
    ...     decode_commit(b'{"txn":{"appId":"a"', source="00000000000000000007.json")
    ... except CorruptLogError as e:
    ...     print(e.message[:43])
    00000000000000000007.json line 1 is not val
    """
    lines = [(n, ln) for n, ln in enumerate(data.split(b"\n"), 1) if ln.strip()]
    try:
        # One parse of the whole file as a JSON array is much faster than one per line;
        # only on failure do we go line by line to name the broken line.
        objs = json.loads(b"[" + b",".join(ln for _, ln in lines) + b"]")
        if len(objs) != len(lines):
            raise ValueError("line count mismatch")
    except ValueError:
        objs = []
        for n, ln in lines:
            try:
                objs.append(json.loads(ln))
            except ValueError as exc:
                raise CorruptLogError(
                    f"{_where(source, n)} is not valid JSON ({exc}): {ln[:120]!r}"
                ) from exc
    out: list[Action] = []
    for (n, _), obj in zip(lines, objs, strict=True):
        if not isinstance(obj, dict):
            raise CorruptLogError(f"{_where(source, n)} is not a JSON object: {obj!r:.120}")
        try:
            action = action_from_json(obj)
        except CorruptLogError as exc:
            raise CorruptLogError(f"{_where(source, n)}: {exc.message}") from exc
        if action is not None:
            out.append(action)
    return out


def encode_commit(actions: Sequence[Action]) -> bytes:
    """Encode actions as a commit file: compact JSON lines, ``commitInfo`` first.

    In-commit timestamps require commitInfo on the first line; Spark always puts it there.

    >>> encode_commit([Protocol(1, 2), CommitInfo(timestamp=5)])
    b'{"commitInfo":{"timestamp":5}}\\n{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\\n'
    """
    ordered: list[Action] = [a for a in actions if isinstance(a, CommitInfo)]
    ordered += [a for a in actions if not isinstance(a, CommitInfo)]
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    return "".join(dumps(action_to_json(a)) + "\n" for a in ordered).encode("utf-8")


# --- checkpoint rows -------------------------------------------------------------------

_MAP_FIELDS = {
    "add": ("partitionValues", "tags"),
    "remove": ("partitionValues", "tags"),
    "metaData": ("configuration",),
    "checkpointMetadata": ("tags",),
    "sidecar": ("tags",),
    "cdc": ("partitionValues", "tags"),
}
# Typed copies of JSON fields that Spark adds to checkpoints for data skipping only.
_DERIVED_FIELDS = frozenset(("partitionValues_parsed", "stats_parsed"))


def action_from_checkpoint_row(column: str, row: JsonDict) -> Action | None:
    """Decode one non-null struct of checkpoint column ``column`` (``to_pylist`` shape).

    Parquet nulls mean "absent"; MAP values arrive as lists of (key, value) pairs.

    >>> action_from_checkpoint_row("add", {"path": "p", "partitionValues": [("d", None)],
    ...     "size": 1, "modificationTime": 2, "dataChange": False, "tags": None,
    ...     "deletionVector": None, "stats": None, "partitionValues_parsed": {"d": None}})
    ... # doctest: +NORMALIZE_WHITESPACE
    AddFile(path='p', partition_values={'d': None}, size=1, modification_time=2,
            data_change=False, stats=None, tags=None, deletion_vector=None, base_row_id=None,
            default_row_commit_version=None, clustering_provider=None, extra=None)
    """
    decode = _DECODERS.get(column)
    if decode is None:
        return None
    obj = {k: v for k, v in row.items() if v is not None and k not in _DERIVED_FIELDS}
    for key in _MAP_FIELDS.get(column, ()):
        value = obj.get(key)
        if isinstance(value, list):
            obj[key] = dict(value)
    if column == "metaData":
        fmt = obj.get("format")
        if fmt is not None and isinstance(fmt.get("options"), list):
            obj["format"] = {"provider": fmt.get("provider"), "options": dict(fmt["options"])}
    dv = obj.get("deletionVector")
    if dv is not None and dv.get("storageType") is None:
        # A struct of nulls is how some writers spell "no DV".
        del obj["deletionVector"]
    try:
        return decode(obj)
    except (KeyError, TypeError, AttributeError) as exc:
        raise CorruptLogError(f"malformed {column!r} checkpoint row: {exc!r}") from exc


_CHECKPOINT_COLUMNS = _names(
    "add remove metaData protocol txn domainMetadata checkpointMetadata sidecar"
)


def action_to_checkpoint_row(action: Action) -> tuple[str, JsonDict]:
    """Return ``(column, camelCase struct)`` for the checkpoint writer (maps as dicts).

    Raises:
        ValueError: for ``commitInfo`` and ``cdc``, which never go into checkpoints.

    >>> action_to_checkpoint_row(SetTransaction("app", 7))
    ('txn', {'appId': 'app', 'version': 7})
    """
    name, encode = _ENCODERS[type(action)]
    if name not in _CHECKPOINT_COLUMNS:
        raise ValueError(f"{name} actions are never written to checkpoints")
    return name, encode(action)
