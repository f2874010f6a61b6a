"""The predicate model: structure, SQL text, partition evaluation and file skipping."""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from typing import Any

import pytest

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.log.partition_values import serialize_partition_value
from txsql.log.predicate_eval import eval_partition
from txsql.log.predicates import (
    FALSE,
    TRUE,
    And,
    Column,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Opaque,
    Or,
    Predicate,
    and_,
    conjuncts,
    referenced_columns,
    split_predicate,
    to_sql,
)
from txsql.log.schema import PrimitiveType, parse_schema


def schema(*cols: tuple[str, str], mapping: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    fields = []
    for name, t in cols:
        meta = {}
        if mapping and name in mapping:
            meta = {"delta.columnMapping.physicalName": mapping[name]}
        fields.append({"name": name, "type": t, "nullable": True, "metadata": meta})
    return parse_schema(json.dumps({"type": "struct", "fields": fields}))


def cmp(op: str, col: str, value: Any) -> Comparison:
    return Comparison(op, Column(col), Literal(value))


S = schema(("p", "integer"), ("d", "date"), ("v", "long"), ("s", "string"), ("t", "timestamp"))


def add(
    stats: dict[str, Any] | None = None, parts: dict[str, str | None] | None = None, **kw: Any
) -> AddFile:
    return AddFile("f", parts or {}, 1, 1, stats=json.dumps(stats) if stats else None, **kw)


# --- structure and SQL -------------------------------------------------------------------


def test_conjuncts_and_and_flatten() -> None:
    a, b, c = cmp("=", "a", 1), cmp("=", "b", 2), cmp("=", "c", 3)
    assert conjuncts(and_(a, and_(b, TRUE), c)) == [a, b, c]
    assert and_(a) == a
    assert conjuncts(TRUE) == []


def test_referenced_columns_are_case_insensitive() -> None:
    p = And((cmp("=", "A", 1), In(Column("b"), (Literal(1),)), Opaque("f(C)", frozenset({"C"}))))
    assert referenced_columns(p) == {"a", "b", "c"}


def test_split_predicate() -> None:
    part, data, rest = cmp("=", "p", 1), cmp(">", "v", 3), Opaque("s LIKE 'a%'", frozenset({"s"}))
    mixed = Or((cmp("=", "p", 2), cmp("=", "v", 1)))
    nondet = Opaque("rand() < p", frozenset({"p"}), deterministic=False)
    got = split_predicate(and_(part, data, rest, mixed, nondet, TRUE), ["P"])
    assert got == (part, data, And((rest, mixed, nondet)))
    assert split_predicate(data, []) == (TRUE, data, TRUE)


@pytest.mark.parametrize(
    ("predicate", "sql"),
    [
        (cmp("=", "id", 1), "id = 1"),
        (cmp("<=>", "s", None), "s <=> NULL"),
        (cmp(">", "d", dt.date(2024, 1, 2)), "d > DATE'2024-01-02'"),
        (cmp("<", "x", 1.5), "x < 1.5D"),
        (cmp("=", "x", Decimal("1.50")), "x = 1.50BD"),
        (cmp("=", "b", True), "b = true"),
        (cmp("=", "s", "it's"), "s = 'it\\'s'"),
        (
            cmp("=", "t", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)),
            "t = TIMESTAMP'2024-01-02 03:04:05Z'",
        ),
        (cmp("=", "t", dt.datetime(2024, 1, 2, 3, 4, 5)), "t = TIMESTAMP_NTZ'2024-01-02 03:04:05'"),
        (
            Or((And((cmp("=", "a", 1), cmp("=", "b", 2))), cmp("=", "c", 3))),
            "a = 1 AND b = 2 OR c = 3",
        ),
        (
            And((Or((cmp("=", "a", 1), cmp("=", "b", 2))), cmp("=", "c", 3))),
            "(a = 1 OR b = 2) AND c = 3",
        ),
        (
            Not(And((IsNull(Column("a")), IsNotNull(Column("b"))))),
            "NOT (a IS NULL AND b IS NOT NULL)",
        ),
        (And((Opaque("s LIKE 'a%'"), cmp("=", "a", 1))), "(s LIKE 'a%') AND a = 1"),
        (Opaque("s LIKE 'a%'"), "s LIKE 'a%'"),
        (In(Column("x y"), (Literal(1), Literal(None))), "`x y` IN (1, NULL)"),
        (TRUE, "true"),
    ],
)
def test_to_sql(predicate: Predicate, sql: str) -> None:
    assert to_sql(predicate) == sql


def test_in_wraps_plain_values() -> None:
    # In wraps plain values at run time, but its field is annotated tuple[Literal, ...].
    mixed = In(Column("a"), (1, Literal(2)))  # type: ignore[arg-type]
    assert mixed.values == (Literal(1), Literal(2))


def test_unknown_operator_is_refused() -> None:
    with pytest.raises(ValueError):
        Comparison("~", Column("a"), Literal(1))


# --- eval_partition ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "values", "expected"),
    [
        (cmp("=", "p", 1), {"p": "1"}, True),
        (cmp("=", "p", "1"), {"p": "1"}, True),
        (cmp("!=", "p", 1), {"p": "1"}, False),
        (cmp("=", "p", 1), {"p": None}, None),
        (cmp("=", "p", 1), {"p": ""}, None),
        (cmp("<=>", "p", None), {"p": None}, True),
        (cmp("<=>", "p", 1), {"p": None}, False),
        (IsNull(Column("p")), {"p": None}, True),
        (IsNotNull(Column("p")), {"p": "3"}, True),
        (In(Column("p"), (Literal(1), Literal(2))), {"p": "2"}, True),
        (In(Column("p"), (Literal(1), Literal(None))), {"p": "2"}, None),
        (In(Column("p"), (Literal(1), Literal(3))), {"p": "2"}, False),
        (Not(cmp("=", "p", 1)), {"p": None}, None),
        (And((cmp("=", "p", 2), cmp("=", "v", 1))), {"p": "1"}, False),
        (And((cmp("=", "p", 1), cmp("=", "v", 1))), {"p": "1"}, None),
        (Or((cmp("=", "p", 1), Opaque("x"))), {"p": "1"}, True),
        (cmp(">", "d", dt.date(2024, 1, 1)), {"d": "2024-03-01"}, True),
        (cmp(">", "d", "2024-06-01"), {"d": "2024-03-01"}, False),
        (cmp("=", "p", "abc"), {"p": "1"}, None),
        (cmp("=", "missing", 1), {"p": "1"}, None),
        (cmp("=", "P", 1), {"p": "1"}, True),
    ],
)
def test_eval_partition(
    predicate: Predicate, values: dict[str, str | None], expected: bool | None
) -> None:
    assert eval_partition(predicate, values, S, ["p", "d"]) is expected


def test_eval_partition_uses_physical_names_under_column_mapping() -> None:
    mapped = schema(("p", "integer"), ("v", "long"), mapping={"p": "col-1"})
    assert eval_partition(cmp("=", "p", 1), {"col-1": "1"}, mapped, ["p"], "name") is True


# --- may_match_file ----------------------------------------------------------------------

STATS = {
    "numRecords": 10,
    "minValues": {"v": 10, "s": "apple", "d": "2024-01-01", "t": "2024-01-01T00:00:00.000Z"},
    "maxValues": {"v": 20, "s": "melon", "d": "2024-12-31", "t": "2024-01-01T00:00:01.000Z"},
    "nullCount": {"v": 0, "s": 2, "d": 0, "t": 0},
}


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (cmp("=", "v", 15), True),
        (cmp("=", "v", 21), False),
        (cmp("<", "v", 10), False),
        (cmp("<=", "v", 10), True),
        (cmp(">", "v", 20), False),
        (cmp(">=", "v", 20), True),
        (cmp("!=", "v", 15), True),
        (Comparison("<", Literal(20), Column("v")), False),
        (cmp("=", "v", None), False),
        (cmp("<=>", "v", None), False),
        (IsNull(Column("v")), False),
        (IsNull(Column("s")), True),
        (IsNotNull(Column("v")), True),
        (In(Column("v"), (Literal(1), Literal(2), Literal(30))), False),
        (In(Column("v"), (Literal(1), Literal(12))), True),
        (Not(cmp("=", "v", 15)), True),
        (Not(cmp(">=", "v", 10)), False),
        (Not(IsNotNull(Column("v"))), False),
        (cmp("=", "s", "zebra"), False),
        (cmp("=", "s", "banana"), True),
        (cmp(">", "d", dt.date(2025, 1, 1)), False),
        (cmp("=", "d", "2024-06-01"), True),
        (cmp(">", "t", dt.datetime(2024, 1, 1, 0, 0, 1, 500, tzinfo=dt.timezone.utc)), True),
        (cmp(">", "t", dt.datetime(2024, 1, 1, 0, 0, 2, tzinfo=dt.timezone.utc)), False),
        (cmp("=", "s", 5), True),  # Spark casts the column: never skip on a type mismatch
        (Opaque("s LIKE 'z%'", frozenset({"s"})), True),
        (Or((cmp("=", "v", 1), cmp("=", "v", 30))), False),
        (And((cmp(">", "v", 12), cmp("<", "v", 11))), True),  # bounds are per conjunct
        (FALSE, False),
        (Literal(None), False),
        (TRUE, True),
        (cmp("=", "nosuch", 1), True),
    ],
)
def test_may_match_file_stats(predicate: Predicate, expected: bool) -> None:
    assert may_match_file(predicate, add(STATS), S, []) is expected


def test_missing_stats_never_skip() -> None:
    assert may_match_file(cmp("=", "v", 999), add(None), S, [])
    assert may_match_file(cmp("=", "v", 999), add({"numRecords": 3}), S, [])


def test_loose_bounds_keep_min_max_but_not_null_counts() -> None:
    loose = {**STATS, "tightBounds": False}
    assert not may_match_file(cmp("=", "v", 999), add(loose), S, [])
    assert may_match_file(IsNull(Column("v")), add(loose), S, [])


def test_long_string_max_is_not_an_upper_bound() -> None:
    prefix = "m" * 32
    stats = {
        "numRecords": 1,
        "minValues": {"s": "a"},
        "maxValues": {"s": prefix},
        "nullCount": {"s": 0},
    }
    assert may_match_file(cmp("=", "s", prefix + "zzz"), add(stats), S, [])
    short = {**stats, "maxValues": {"s": "m" * 5}}
    assert not may_match_file(cmp("=", "s", "m" * 6), add(short), S, [])


def test_all_null_column_matches_no_comparison() -> None:
    stats = {"numRecords": 3, "minValues": {}, "maxValues": {}, "nullCount": {"v": 3}}
    assert not may_match_file(cmp("!=", "v", 1), add(stats), S, [])
    assert may_match_file(IsNull(Column("v")), add(stats), S, [])


def test_file_whose_rows_are_all_deleted_matches_nothing() -> None:
    dv = DeletionVectorDescriptor("i", "x", 1, 10)
    assert not may_match_file(TRUE, add(STATS, deletion_vector=dv), S, [])


def test_partition_values_are_exact() -> None:
    f = add(STATS, {"p": "1"})
    assert may_match_file(cmp("=", "p", 1), f, S, ["p"])
    assert not may_match_file(cmp("=", "p", 2), f, S, ["p"])
    assert not may_match_file(And((cmp("=", "p", 1), cmp("=", "v", 99))), f, S, ["p"])
    assert not may_match_file(IsNull(Column("p")), f, S, ["p"])
    assert may_match_file(IsNull(Column("p")), add(STATS, {"p": None}), S, ["p"])


def test_stats_under_column_mapping_use_physical_names() -> None:
    mapped = schema(("v", "long"), mapping={"v": "col-9"})
    stats = {
        "numRecords": 1,
        "minValues": {"col-9": 1},
        "maxValues": {"col-9": 2},
        "nullCount": {"col-9": 0},
    }
    assert not may_match_file(cmp("=", "v", 5), add(stats), mapped, [], "name")
    assert may_match_file(cmp("=", "v", 2), add(stats), mapped, [], "name")


# --- property-style: never skip a file that has a matching row ----------------------------

COLUMNS = (("a", "long"), ("b", "string"), ("c", "double"), ("p", "integer"))
RS = schema(*COLUMNS)


def _random_value(rng: random.Random, kind: str) -> Any:
    if rng.random() < 0.15:
        return None
    if kind == "long":
        return rng.randint(-5, 5)
    if kind == "integer":
        return rng.randint(0, 3)
    if kind == "double":
        return rng.choice([-1.5, 0.0, 0.5, 2.25, 3.0])
    length = rng.choice([1, 2, 3, 33, 40])
    return "".join(rng.choice("abc") for _ in range(length))


def _random_predicate(rng: random.Random, depth: int = 0) -> Predicate:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        kids = tuple(_random_predicate(rng, depth + 1) for _ in range(rng.randint(2, 3)))
        return And(kids) if rng.random() < 0.5 else Or(kids)
    if depth < 3 and roll < 0.4:
        return Not(_random_predicate(rng, depth + 1))
    name, kind = rng.choice(COLUMNS)
    value = _random_value(rng, kind)
    shape = rng.random()
    if shape < 0.1:
        return IsNull(Column(name))
    if shape < 0.2:
        return IsNotNull(Column(name))
    if shape < 0.3:
        return In(Column(name), tuple(_random_value(rng, kind) for _ in range(3)))
    op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "<=>"])
    if rng.random() < 0.2:
        return Comparison(_FLIP[op], Literal(value), Column(name))
    return Comparison(op, Column(name), Literal(value))


_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}


def _file_for(rows: list[dict[str, Any]], rng: random.Random) -> AddFile:
    stats: dict[str, Any] = {
        "numRecords": len(rows),
        "minValues": {},
        "maxValues": {},
        "nullCount": {},
    }
    for name, _ in COLUMNS[:3]:
        values = [r[name] for r in rows if r[name] is not None]
        stats["nullCount"][name] = len(rows) - len(values)
        if values:
            lo, hi = min(values), max(values)
            if isinstance(hi, str) and len(hi) > 32:  # Delta's truncation (+ tie-breaker)
                lo, hi = lo[:32], hi[:32] + "\U0010ffff"
            stats["minValues"][name], stats["maxValues"][name] = lo, hi
    if rng.random() < 0.2:
        stats["tightBounds"] = False
    if rng.random() < 0.1:
        del stats["minValues"]
    return AddFile(
        "f",
        {"p": serialize_partition_value(rows[0]["p"], PrimitiveType("integer"))},
        1,
        1,
        stats=json.dumps(stats),
    )


def _row_matches(p: Predicate, row: dict[str, Any]) -> bool:
    values = {
        k: serialize_partition_value(v, t)
        for (k, t), v in zip(
            ((n, PrimitiveType(t)) for n, t in COLUMNS), (row[n] for n, _ in COLUMNS)
        )
    }
    return eval_partition(p, values, RS, [n for n, _ in COLUMNS]) is True


@pytest.mark.parametrize("seed", range(40))
def test_may_match_file_never_skips_a_matching_file(seed: int) -> None:
    rng = random.Random(seed)
    checked = skipped = 0
    for _ in range(60):
        partition = _random_value(rng, "integer")
        rows = []
        for _ in range(rng.randint(1, 6)):
            row = {n: _random_value(rng, k) for n, k in COLUMNS[:3]}
            row["p"] = partition
            rows.append(row)
        f = _file_for(rows, rng)
        for _ in range(10):
            p = _random_predicate(rng)
            matches = any(_row_matches(p, r) for r in rows)
            verdict = may_match_file(p, f, RS, ["p"])
            checked += 1
            skipped += not verdict
            assert verdict or not matches, (to_sql(p), rows, f.stats)
    assert skipped > checked // 20, "the oracle must actually exercise skipping"
