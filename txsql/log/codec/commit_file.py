"""Commit files: newline-delimited JSON, one action object per line.

The per-action mapping is :mod:`~txsql.log.codec.actions_from_json` and
:mod:`~txsql.log.codec.actions_to_json`; this module adds what belongs to the file:
line splitting, skipping unknown action types, naming the broken line of a corrupt
(e.g. truncated) commit, and writing ``commitInfo`` first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from txsql.errors import CorruptLogError
from txsql.log.actions import (
    Action,
    CommitInfo,
    Protocol,  # noqa: F401  (named by encode_commit's doctest)
)
from txsql.log.codec.actions_from_json import action_from_json
from txsql.log.codec.actions_to_json import action_to_json


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
