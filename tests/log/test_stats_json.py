"""Stats strings: strict JSON out, carried-over bounds kept byte for byte."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from txsql.log.stats_json import encode_stats, loosen_stats

DECIMAL_STATS = (
    '{"numRecords":2,"minValues":{"id":1,"d":0.000000000000000000},'
    '"maxValues":{"id":2,"d":12345678901234567890.123456789012345678},'
    '"nullCount":{"id":0,"d":0}}'
)


def test_loosening_keeps_every_bound_as_written() -> None:
    loose = loosen_stats(DECIMAL_STATS)
    assert loose == DECIMAL_STATS[:-1] + ',"tightBounds":false}'
    parsed = json.loads(loose or "", parse_float=Decimal)
    assert parsed["maxValues"]["d"] == Decimal("12345678901234567890.123456789012345678")
    assert parsed["tightBounds"] is False


@pytest.mark.parametrize(
    "stats",
    [
        '{"numRecords":1,"maxValues":{"s":"\\u00e9\\/x","f":1E+400,"i":-0}}',  # escapes kept
        '{ "numRecords" : 1 ,\n "minValues" : {"x": 1.10} }\n',  # spacing kept
        '{"numRecords":3,"minValues":{"x":"Infinity"},"maxValues":{"x":"NaN"}}',
    ],
)
def test_loosening_only_appends_the_flag(stats: str) -> None:
    loose = loosen_stats(stats)
    assert loose is not None
    body = stats.rstrip()
    assert loose.startswith(body[:-1]) and loose.endswith(
        '"tightBounds":false}' + stats[len(body) :]
    )
    assert json.loads(loose)["tightBounds"] is False


def test_loosening_replaces_an_existing_flag_and_keeps_the_rest() -> None:
    stats = '{"numRecords":2,"tightBounds":true,"maxValues":{"d":0.10000000000000000001}}'
    loose = loosen_stats(stats)
    assert loose == '{"numRecords":2,"maxValues":{"d":0.10000000000000000001},"tightBounds":false}'
    assert loosen_stats(loose) == loose


@pytest.mark.parametrize("text", [None, "", "[1,2]", "not json", '{"a":1} trailing', '{"a":}'])
def test_loosening_leaves_what_is_not_an_object_alone(text: str | None) -> None:
    assert loosen_stats(text) == text


def test_an_empty_object_gets_just_the_flag() -> None:
    assert loosen_stats(" {} ") == ' {"tightBounds":false} '


def test_encoded_stats_are_strict_json_with_exact_decimals() -> None:
    text = encode_stats(
        {
            "numRecords": 3,
            "minValues": {"d": Decimal("-99999999999999999999.999999999999999999"), "x": -0.0},
            "maxValues": {"s": "日本", "x": "Infinity", "nested": {"a": 1.5}},
        }
    )
    assert text == (
        '{"numRecords":3,"minValues":{"d":-99999999999999999999.999999999999999999,"x":-0.0},'
        '"maxValues":{"s":"日本","x":"Infinity","nested":{"a":1.5}}}'
    )
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan"), Decimal("NaN")])
def test_non_finite_numbers_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="not a JSON number"):
        encode_stats({"maxValues": {"x": bad}})
