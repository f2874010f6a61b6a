"""The ``stats`` string of an ``add``: written as strict JSON, edited without re-encoding.

Other readers parse this string with their own JSON parsers and compare its numbers with
the data, so two rules keep their answers right:

* What we write is strict JSON (no ``NaN``/``Infinity`` literals, which deltalake refuses)
  with every number spelled exactly: a DECIMAL(38, s) bound goes out digit for digit,
  never through a float that would round it past a real value.
* Stats we carry over (a file re-added with a deletion vector) keep their text byte for
  byte. Marking them ``tightBounds: false`` is a textual edit of the top-level object;
  decoding and re-encoding would turn ``12345678901234567890.123`` into
  ``1.2345678901234567e+19``, a maximum below the real one, and readers would then skip
  the file for ``d > 12345678901234567500``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

TIGHT_BOUNDS = "tightBounds"
_LOOSE_MEMBER = f'"{TIGHT_BOUNDS}":false'
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


def encode_stats(value: Any) -> str:
    """Strict, compact JSON for a stats object; decimals are written exactly.

    >>> encode_stats({"numRecords": 2, "maxValues": {"d": Decimal("1E+3"), "s": "é"}})
    '{"numRecords":2,"maxValues":{"d":1000,"s":"é"}}'
    >>> encode_stats({"x": float("inf")})
    Traceback (most recent call last):
    ValueError: stats value inf is not a JSON number
    """
    if isinstance(value, dict):
        items = (_encode_scalar(str(k)) + ":" + encode_stats(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    return _encode_scalar(value)


def _encode_scalar(value: Any) -> str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"stats value {value} is not a JSON number")
        return format(value, "f")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"stats value {value} is not a JSON number")
    # allow_nan=False: nothing can slip a bare NaN/Infinity literal into the log.
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def stats_from_parsed(parsed: Mapping[str, Any] | None) -> str | None:
    """The stats JSON of a checkpoint's ``stats_parsed`` struct (``to_pylist`` shape).

    Spelled as Delta writes stats: dates ``YYYY-MM-DD``, timestamps ISO-8601 in UTC with
    milliseconds (microseconds when they are not whole), exact decimals; nulls, binary
    values and NaN bounds are left out, infinities quoted.

    >>> ts = dt.datetime(1, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc)
    >>> stats_from_parsed({"numRecords": 2, "minValues": {"t": ts, "s": {"x": None}},
    ...     "maxValues": {"f": float("inf"), "m": Decimal("1.50")}, "tightBounds": None})
    '{"numRecords":2,"minValues":{"t":"0001-01-02T03:04:05.006Z"},"maxValues":{"f":"Infinity","m":1.50}}'
    >>> stats_from_parsed(None) is None
    True
    """
    if not parsed:
        return None
    out = _json_members(parsed)
    return encode_stats(out) if out else None


def _json_members(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            inner = _json_members(value)
            if inner:
                out[key] = inner
            continue
        converted = _json_stat(value)
        if converted is not None:
            out[key] = converted
    return out


def _json_stat(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return None  # NaN bounds nothing
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dt.datetime):
        zone = ""
        if value.tzinfo is not None:
            value, zone = value.astimezone(dt.timezone.utc).replace(tzinfo=None), "Z"
        v, us = value, value.microsecond
        fraction = f"{us // 1000:03d}" if us % 1000 == 0 else f"{us:06d}"
        day = f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
        return f"{day}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}.{fraction}{zone}"
    if isinstance(value, dt.date):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if isinstance(value, (bytes, bytearray)):
        return None  # Delta keeps no binary bounds
    return value


def loosen_stats(stats: str | None) -> str | None:
    """``stats`` marked ``tightBounds: false``, every other byte kept (None/'' unchanged).

    Text that is not a JSON object is returned as it was: it carries no bounds to loosen.

    >>> loosen_stats('{"numRecords":2,"maxValues":{"d":12345678901234567890.123456789}}')
    '{"numRecords":2,"maxValues":{"d":12345678901234567890.123456789},"tightBounds":false}'
    >>> loosen_stats('{"tightBounds":true,"numRecords":1}')
    '{"numRecords":1,"tightBounds":false}'
    >>> loosen_stats('{}')
    '{"tightBounds":false}'
    """
    if not stats:
        return stats
    members = _top_level_members(stats)
    if members is None:
        return stats
    if all(key != TIGHT_BOUNDS for key, _ in members):
        # Insert before the closing brace: the original text stays intact around it.
        close = stats.rstrip(_WHITESPACE)
        separator = "," if members else ""
        return close[:-1] + separator + _LOOSE_MEMBER + "}" + stats[len(close) :]
    kept = [text for key, text in members if key != TIGHT_BOUNDS]
    return "{" + ",".join([*kept, _LOOSE_MEMBER]) + "}"


def _top_level_members(text: str) -> list[tuple[str, str]] | None:
    """``(key, raw "key":value text)`` of each member of a JSON object, or None if ``text``
    is not one object. A value is parsed only to find where it ends; its text is kept."""
    try:
        i = _skip(text, 0)
        if text[i] != "{":
            return None
        members: list[tuple[str, str]] = []
        i = _skip(text, i + 1)
        if text[i] == "}":
            return members if _skip(text, i + 1) == len(text) else None
        while True:
            if text[i] != '"':
                return None
            start = i
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if text[i] != ":":
                return None
            # raw_decode parses the value to find where it ends; the result is discarded.
            _, end = _DECODER.raw_decode(text, _skip(text, i + 1))
            members.append((key, text[start:end]))
            i = _skip(text, end)
            if text[i] == "}":
                return members if _skip(text, i + 1) == len(text) else None
            if text[i] != ",":
                return None
            i = _skip(text, i + 1)
    except (ValueError, IndexError):
        return None


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i
