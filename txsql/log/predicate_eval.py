"""Three-valued evaluation of a predicate on a file's partition values.

Conservative by design: a question that cannot be answered exactly is answered NULL
(unknown), never TRUE or FALSE, so no caller removes or skips a file on a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from txsql.errors import SchemaError
from txsql.log.partition_values import parse_partition_value
from txsql.log.predicate_values import Undecidable, coerce_literal, compare_values, field_type
from txsql.log.predicates import (
    And,
    Column,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Opaque,
    Or,
    Predicate,
)
from txsql.log.schema import (
    DataType,
    StructType,
    physical_name,
)

# --- three-valued evaluation on partition values ------------------------------------------

Lookup = Callable[[str], tuple[Any, DataType]]


def _kleene(p: Predicate, lookup: Lookup) -> bool | None:
    if isinstance(p, And):
        results = [_kleene(c, lookup) for c in p.children]
        return False if False in results else (None if None in results else True)
    if isinstance(p, Or):
        results = [_kleene(c, lookup) for c in p.children]
        return True if True in results else (None if None in results else False)
    if isinstance(p, Not):
        inner = _kleene(p.child, lookup)
        return None if inner is None else not inner
    try:
        return _kleene_atom(p, lookup)
    except Undecidable:
        return None


def _value(e: Expr, other: Expr, lookup: Lookup) -> Any:
    """The typed value of ``e``; a literal is typed like the column on the other side."""
    if isinstance(e, Column):
        return lookup(e.name)[0]
    if isinstance(other, Column):
        return coerce_literal(e.value, lookup(other.name)[1])
    return e.value


def _kleene_atom(p: Predicate, lookup: Lookup) -> bool | None:
    if isinstance(p, Literal):
        return None if p.value is None else bool(p.value)
    if isinstance(p, Opaque):
        return None
    if isinstance(p, (IsNull, IsNotNull)):
        value = _value(p.child, p.child, lookup)
        return (value is None) == isinstance(p, IsNull)
    if isinstance(p, In):
        value = _value(p.child, p.child, lookup)
        if value is None:
            return None
        typed = [_value(v, p.child, lookup) for v in p.values]
        if any(t is not None and compare_values("=", value, t) for t in typed):
            return True
        return None if any(t is None for t in typed) else False
    assert isinstance(p, Comparison)
    left = _value(p.left, p.right, lookup)
    right = _value(p.right, p.left, lookup)
    if p.op == "<=>":
        if left is None or right is None:
            return left is None and right is None
        return compare_values("=", left, right)
    if left is None or right is None:
        return None
    return compare_values(p.op, left, right)


def eval_partition(
    p: Predicate,
    partition_values: Mapping[str, str | None],
    schema: StructType,
    partition_columns: Sequence[str],
    column_mapping_mode: str = "none",
) -> bool | None:
    """Evaluate ``p`` for a file's partition in SQL three-valued logic.

    ``None`` means unknown: SQL NULL, or not decidable from partition values (a data
    column, an :class:`Opaque`, a literal that cannot be typed like the column). Callers
    treat ``None`` as "may match".

    >>> from txsql.log.schema import parse_schema
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"p","type":"integer",'
    ...     '"nullable":true,"metadata":{}},{"name":"v","type":"long","nullable":true,"metadata":{}}]}')
    >>> eval_partition(Comparison(">=", Column("P"), Literal(2)), {"p": "3"}, s, ["p"])
    True
    >>> eval_partition(Or((Comparison("=", Column("p"), Literal(1)), Comparison("=", Column("v"), Literal(1)))), {"p": "3"}, s, ["p"]) is None
    True
    >>> eval_partition(Comparison("=", Column("p"), Literal(1)), {"p": None}, s, ["p"]) is None
    True
    """  # noqa: E501
    parts = {c.lower() for c in partition_columns}

    def lookup(name: str) -> tuple[Any, DataType]:
        if name.lower() not in parts:
            raise Undecidable
        logical, dtype = field_type(schema, name)
        key = physical_name(schema.field(logical), column_mapping_mode)
        if key in partition_values:
            text = partition_values[key]
        elif logical in partition_values:
            text = partition_values[logical]
        else:
            raise Undecidable
        try:
            return parse_partition_value(text, dtype), dtype
        except SchemaError:
            raise Undecidable from None

    return _kleene(p, lookup)
