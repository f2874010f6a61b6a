"""Checkpoint rows: one struct of a Parquet checkpoint column <-> one action.

Checkpoints are Parquet with one struct column per action type, named like the JSON
action (``add``, ``metaData``...), so the JSON readers (``_DECODERS``) and writers
(``_ENCODERS``) of :mod:`~txsql.log.codec.actions_from_json` and
:mod:`~txsql.log.codec.actions_to_json` do the mapping; this module bridges the Parquet
shape: nulls mean "absent", MAP values arrive as lists of pairs, Spark's derived
``*_parsed`` columns are dropped (txsql.log.checkpoint_read first turns ``stats_parsed``
into ``stats`` where only the struct was written), and ``commitInfo`` and ``cdc`` never
become rows.
"""

from __future__ import annotations

from txsql.errors import CorruptLogError
from txsql.log.actions import (
    Action,
    JsonDict,
    SetTransaction,  # noqa: F401  (named by a doctest below)
)
from txsql.log.codec.actions_from_json import _DECODERS, _names
from txsql.log.codec.actions_to_json import _ENCODERS

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
