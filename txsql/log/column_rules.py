"""What a table's metadata asks every writer to enforce or compute, as plain data.

Delta keeps these rules in the metadata action, where every engine finds them:

- CHECK constraints: ``configuration["delta.constraints.<name>"] = "<SQL boolean>"``
  (feature ``checkConstraints``); a written row must make the expression TRUE.
- NOT NULL: ``"nullable": false`` on a field (feature ``invariants``), top-level or a struct
  child; legacy expression invariants: field metadata ``delta.invariants``.
- Generated columns: field metadata ``delta.generationExpression`` (``generatedColumns``).
- Identity columns: field metadata ``delta.identity.start|step|allowExplicitInsert|
  highWaterMark`` (``identityColumns``).
- Defaults: field metadata ``CURRENT_DEFAULT`` (``allowColumnDefaults``, never implied).

This module only reads and rewrites that metadata; the engine turns it into Spark
expressions (:mod:`txsql.engine.write_rules`). It imports no engine code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from txsql.errors import SchemaError
from txsql.log.actions import Metadata

CONSTRAINT_PREFIX = "delta.constraints."
GENERATION_KEY = "delta.generationExpression"
DEFAULT_KEY = "CURRENT_DEFAULT"
INVARIANTS_KEY = "delta.invariants"
IDENTITY_START = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"
IDENTITY_EXPLICIT = "delta.identity.allowExplicitInsert"
IDENTITY_HWM = "delta.identity.highWaterMark"
IDENTITY_KEYS = (IDENTITY_START, IDENTITY_STEP, IDENTITY_EXPLICIT)


@dataclass(frozen=True, slots=True)
class Check:
    """A boolean SQL expression every written row must make TRUE (NULL fails too)."""

    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class Identity:
    """An identity column: values ``start + k * step`` past the high-water mark."""

    column: str
    start: int
    step: int
    allow_explicit: bool
    high_water_mark: int | None

    def next_value(self) -> int:
        """The first value a new write may hand out."""
        return self.start if self.high_water_mark is None else self.high_water_mark + self.step


@dataclass(frozen=True, slots=True)
class ColumnRules:
    """Everything a writer of one table must enforce or fill in (logical column names)."""

    checks: tuple[Check, ...] = ()
    not_null: tuple[tuple[str, ...], ...] = ()  # field paths; a struct child has several parts
    generated: tuple[tuple[str, str], ...] = ()  # (column, expression)
    defaults: tuple[tuple[str, str], ...] = ()  # (column, expression)
    identity: tuple[Identity, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.checks or self.not_null or self.generated or self.defaults or self.identity
        )


def _fields(metadata: Metadata) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = json.loads(metadata.schema_string).get("fields", [])
    return fields


def check_constraints(configuration: Mapping[str, str]) -> dict[str, str]:
    """Constraint name (as stored, lower-case) -> expression.

    >>> check_constraints({"delta.constraints.pos": "x > 0", "delta.appendOnly": "true"})
    {'pos': 'x > 0'}
    """
    return {
        key[len(CONSTRAINT_PREFIX) :]: value
        for key, value in configuration.items()
        if key.lower().startswith(CONSTRAINT_PREFIX)
    }


def _invariant(column: str, raw: Any) -> Check:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        expression = value["expression"]["expression"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SchemaError(
            f"column {column} has an invariant txsql cannot read: {raw!r}",
            hint='Delta stores invariants as {"expression":{"expression":"<SQL>"}}.',
        ) from exc
    return Check(f"invariant on {column}", str(expression))


def _not_null_paths(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for field in fields:
        path = (*prefix, field["name"])
        if not field.get("nullable", True):
            paths.append(path)
        kind = field.get("type")
        if isinstance(kind, dict) and kind.get("type") == "struct":
            paths.extend(_not_null_paths(kind.get("fields", []), path))
    return paths


def identity_of(column: str, meta: Mapping[str, Any]) -> Identity | None:
    """The identity spec in one field's metadata, or None for an ordinary column.

    >>> identity_of("id", {"delta.identity.start": 1, "delta.identity.step": 2,
    ...                    "delta.identity.allowExplicitInsert": False}).next_value()
    1
    """
    present = [k for k in IDENTITY_KEYS if k in meta]
    if not present:
        return None
    if len(present) != len(IDENTITY_KEYS):
        raise SchemaError(
            f"identity column {column} has incomplete metadata (has {', '.join(present)})",
            hint="Delta needs delta.identity.start, .step and .allowExplicitInsert together.",
        )
    step = int(meta[IDENTITY_STEP])
    if step == 0:
        raise SchemaError(f"identity column {column} has step 0", hint="Use a non-zero step.")
    hwm = meta.get(IDENTITY_HWM)
    return Identity(
        column,
        int(meta[IDENTITY_START]),
        step,
        _flag(meta[IDENTITY_EXPLICIT]),
        None if hwm is None else int(hwm),
    )


def _flag(value: Any) -> bool:
    """A JSON boolean; delta-rs writes ``allowExplicitInsert`` as the string "false".

    >>> _flag("false"), _flag(True), _flag("TRUE")
    (False, True, True)
    """
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def column_rules(metadata: Metadata) -> ColumnRules:
    """The rules ``metadata`` asks writers to apply.

    >>> m = Metadata("id", json.dumps({"type": "struct", "fields": [
    ...     {"name": "a", "type": "long", "nullable": False, "metadata": {}},
    ...     {"name": "b", "type": "long", "nullable": True,
    ...      "metadata": {"delta.generationExpression": "a * 2"}}]}),
    ...     configuration={"delta.constraints.pos": "a > 0"})
    >>> r = column_rules(m)
    >>> r.checks, r.not_null, r.generated
    ((Check(name='pos', expression='a > 0'),), (('a',),), (('b', 'a * 2'),))
    """
    fields = _fields(metadata)
    checks = [Check(n, e) for n, e in check_constraints(metadata.configuration).items()]
    generated, defaults, identity = [], [], []
    for field in fields:
        meta = field.get("metadata") or {}
        name = field["name"]
        if INVARIANTS_KEY in meta:
            checks.append(_invariant(name, meta[INVARIANTS_KEY]))
        if GENERATION_KEY in meta:
            generated.append((name, str(meta[GENERATION_KEY])))
        if DEFAULT_KEY in meta:
            defaults.append((name, str(meta[DEFAULT_KEY])))
        spec = identity_of(name, meta)
        if spec is not None:
            identity.append(spec)
    return ColumnRules(
        tuple(checks),
        tuple(_not_null_paths(fields, ())),
        tuple(generated),
        tuple(defaults),
        tuple(identity),
    )


def features_used(metadata: Metadata) -> frozenset[str]:
    """Writer features the metadata activates (what the protocol must list).

    >>> m = Metadata("id", '{"type":"struct","fields":[]}', configuration={
    ...     "delta.constraints.c": "true"})
    >>> sorted(features_used(m))
    ['checkConstraints']
    """
    rules = column_rules(metadata)
    used = set()
    if check_constraints(metadata.configuration):
        used.add("checkConstraints")
    fields = _fields(metadata)
    if rules.not_null or any(INVARIANTS_KEY in (f.get("metadata") or {}) for f in fields):
        used.add("invariants")
    if rules.generated:
        used.add("generatedColumns")
    if rules.identity:
        used.add("identityColumns")
    if rules.defaults:
        used.add("allowColumnDefaults")
    return frozenset(used)


# --- metadata rewrites ------------------------------------------------------------------------


def _with_fields(metadata: Metadata, fields: list[dict[str, Any]]) -> Metadata:
    schema = json.loads(metadata.schema_string)
    schema["fields"] = fields
    return replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))


def _field_index(fields: list[dict[str, Any]], column: str, table: str) -> int:
    for i, field in enumerate(fields):
        if field["name"].lower() == column.lower():
            return i
    names = ", ".join(f["name"] for f in fields)
    raise SchemaError(f"{table} has no column {column}", hint=f"Its columns are {names}.")


def with_field_metadata(
    metadata: Metadata,
    column: str,
    table: str,
    *,
    set_keys: Mapping[str, Any] | None = None,
    drop_keys: tuple[str, ...] = (),
    nullable: bool | None = None,
) -> Metadata:
    """``metadata`` with one top-level column's metadata keys or nullability changed."""
    fields = _fields(metadata)
    i = _field_index(fields, column, table)
    field = dict(fields[i])
    meta = {k: v for k, v in (field.get("metadata") or {}).items() if k not in drop_keys}
    meta.update(set_keys or {})
    field["metadata"] = meta
    if nullable is not None:
        field["nullable"] = nullable
    fields[i] = field
    return _with_fields(metadata, fields)


def with_high_water_marks(metadata: Metadata, marks: Mapping[str, int]) -> Metadata:
    """``metadata`` with identity columns' high-water marks moved forward (never back)."""
    fields = _fields(metadata)
    for i, field in enumerate(fields):
        mark = marks.get(field["name"])
        spec = identity_of(field["name"], field.get("metadata") or {})
        if mark is None or spec is None:
            continue
        old = spec.high_water_mark
        if old is not None and (mark <= old if spec.step > 0 else mark >= old):
            continue
        fields[i] = {**field, "metadata": {**field["metadata"], IDENTITY_HWM: mark}}
    return _with_fields(metadata, fields)


def constraint_key(name: str) -> str:
    """The configuration key of a constraint (Delta lower-cases the name)."""
    return CONSTRAINT_PREFIX + name.lower()


def without_high_water_marks(schema_string: str) -> str:
    """The schema with identity high-water marks removed (to compare table shapes: a
    concurrent write that only moved a mark changed no rule for other writers).

    >>> without_high_water_marks('{"fields":[{"name":"i","metadata":{"delta.identity.highWaterMark":3}}]}')
    '{"fields":[{"name":"i","metadata":{}}]}'
    """  # noqa: E501
    schema = json.loads(schema_string)
    for field in schema.get("fields", []):
        (field.get("metadata") or {}).pop(IDENTITY_HWM, None)
    return json.dumps(schema, separators=(",", ":"))
