"""The Delta log wire format: the one place camelCase names meet the action dataclasses.

Commits are newline-delimited JSON, one ``{"<actionName>": {...}}`` object per line;
checkpoints are Parquet with one struct column per action type. Readers must ignore
unknown action types and unknown fields, and a read-modify-write must not lose the
latter, so every field we do not model lands in the action's ``extra`` dict and is
written back verbatim.

Every mapping between an action's camelCase wire names and its snake_case fields lives
in this package, so a field added to an action is mapped here, both ways, for commits and
checkpoints alike. Outside it only the checkpoint spells wire names, for speed over
millions of adds: its Parquet layout and columnar ``add`` writer
(``txsql/log/checkpoint.py``; a checkpointed new field needs its Parquet type there too)
and its columnar reader of ``add`` columns holding only known fields
(``txsql/log/checkpoint_read.py``). One module per shape:

* ``actions_from_json``: JSON object -> action, one reader per action type, the wire
  names each one models (the rest goes to ``extra``), deletion vector descriptors;
* ``actions_to_json``: action -> JSON object, one writer per action type, ``extra``
  written back, deletion vector descriptors;
* ``commit_file``: commit files (``decode_commit``, ``encode_commit``) built on the two;
* ``checkpoint_rows``: checkpoint Parquet structs <-> actions, reusing the same readers
  and writers, so a field is mapped once for commits and checkpoints alike.

Callers import from the package (``from txsql.log.codec import decode_commit``).
"""

from __future__ import annotations

from txsql.log.codec.actions_from_json import action_from_json, dv_from_json
from txsql.log.codec.actions_to_json import action_to_json, dv_to_json
from txsql.log.codec.checkpoint_rows import action_from_checkpoint_row, action_to_checkpoint_row
from txsql.log.codec.commit_file import decode_commit, encode_commit

__all__ = [
    "action_from_checkpoint_row",
    "action_from_json",
    "action_to_checkpoint_row",
    "action_to_json",
    "decode_commit",
    "dv_from_json",
    "dv_to_json",
    "encode_commit",
]
