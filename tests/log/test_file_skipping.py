"""File skipping on columns whose stats or partition values do not compare like the rows:
widened columns (bounds written at the old type) and collated strings."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.log.predicates import Column, Comparison, Literal
from txsql.log.schema import parse_schema


def schema(type_: str, metadata: dict[str, Any]) -> Any:
    field = {"name": "c", "type": type_, "nullable": True, "metadata": metadata}
    return parse_schema(json.dumps({"type": "struct", "fields": [field]}))


def file_with(lo: Any, hi: Any, partition: dict[str, str | None] | None = None) -> AddFile:
    stats = {"numRecords": 1, "minValues": {"c": lo}, "maxValues": {"c": hi}, "nullCount": {"c": 0}}
    return AddFile("f.parquet", partition or {}, 1, 0, stats=json.dumps(stats))


def test_float_bounds_of_a_widened_double_column_never_skip() -> None:
    # The file holds FLOAT -1.1, read as DOUBLE -1.100000023841858; its stats say -1.1.
    # As a double bound -1.1 would prove "c < -1.10000001" false: a wrong skip.
    widened = schema("double", {"delta.typeChanges": [{"fromType": "float", "toType": "double"}]})
    predicate = Comparison("<", Column("c"), Literal(-1.10000001))
    assert may_match_file(predicate, file_with(-1.1, -1.1), widened, [])
    # Without the history the same stats are exact double bounds and do skip.
    assert not may_match_file(predicate, file_with(-1.1, -1.1), schema("double", {}), [])


def test_integer_bounds_of_a_widened_column_still_skip() -> None:
    widened = schema("long", {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]})
    assert not may_match_file(
        Comparison(">", Column("c"), Literal(9)), file_with(1, 5), widened, []
    )
    decimal = schema(
        "decimal(12,4)",
        {"delta.typeChanges": [{"fromType": "decimal(10,2)", "toType": "decimal(12,4)"}]},
    )
    predicate = Comparison("=", Column("c"), Literal(Decimal("67.8901")))
    assert not may_match_file(predicate, file_with(67.89, 67.89), decimal, [])


def test_collated_columns_never_skip_on_binary_stats_or_partition_values() -> None:
    lcase = schema("string", {"__COLLATIONS": {"c": "spark.UTF8_LCASE"}})
    upper = Comparison("=", Column("c"), Literal("ABC"))
    # Under UTF8_LCASE 'abc' = 'ABC'; the binary bounds ['abc', 'abc'] exclude 'ABC'.
    assert may_match_file(upper, file_with("abc", "abc"), lcase, [])
    assert may_match_file(upper, AddFile("p.parquet", {"c": "abc"}, 1, 0), lcase, ["c"])
    plain = schema("string", {})
    assert not may_match_file(upper, file_with("abc", "abc"), plain, [])
    assert not may_match_file(upper, AddFile("p.parquet", {"c": "abc"}, 1, 0), plain, ["c"])
