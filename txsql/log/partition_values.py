"""Partition values as the log stores them (strings), typed by the column's Delta type.

Follows PROTOCOL.md "Partition Value Serialization" (delta-io/delta): parsing accepts the
forms Spark and other writers produce; an empty string or a missing value is NULL.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from txsql.errors import SchemaError
from txsql.log.schema import DataType, DecimalType, PrimitiveType, type_to_json_value

_INTEGRAL = frozenset(("long", "integer", "short", "byte"))
_TIMESTAMP = re.compile(
    r"(\d{4,})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def _parse_timestamp(text: str, ntz: bool) -> dt.datetime:
    m = _TIMESTAMP.fullmatch(text.strip())
    if m is None:
        raise SchemaError(f"invalid timestamp partition value {text!r}")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    value = dt.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micros
    )
    if ntz:
        return value
    offset = dt.timedelta(0)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        offset = -offset if zone[0] == "-" else offset
    # Spark writes the session-local time without a zone; txsql sessions run in UTC.
    return value.replace(tzinfo=dt.timezone(offset)).astimezone(dt.timezone.utc)


def parse_partition_value(text: str | None, type: DataType) -> object:
    """Turn a ``partitionValues`` string into a Python value of the column's type.

    An empty string or ``None`` is SQL NULL. Timestamps come back as UTC datetimes
    (``timestamp_ntz`` as naive ones), decimals as :class:`decimal.Decimal`.

    >>> parse_partition_value("2021-01-01 10:00:00.5", PrimitiveType("timestamp"))
    datetime.datetime(2021, 1, 1, 10, 0, 0, 500000, tzinfo=datetime.timezone.utc)
    >>> parse_partition_value("", PrimitiveType("integer")) is None
    True
    """
    if text is None or text == "":
        return None
    try:
        if isinstance(type, DecimalType):
            return Decimal(text)
        if not isinstance(type, PrimitiveType):
            raise SchemaError(f"a {type_to_json_value(type)} column cannot be a partition column")
        name = type.name
        if name in _INTEGRAL:
            return int(text)
        if name in ("float", "double"):
            return float(text)
        if name == "boolean":
            lowered = text.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError(text)
            return lowered == "true"
        if name == "date":
            return dt.date.fromisoformat(text.strip()[:10])
        if name in ("timestamp", "timestamp_ntz"):
            return _parse_timestamp(text, name == "timestamp_ntz")
        if name == "binary":
            return text.encode("utf-8")
        if name == "string" or name.startswith("string collate"):
            return text
    except (ValueError, InvalidOperation) as exc:
        raise SchemaError(
            f"partition value {text!r} is not a valid {type_to_json_value(type)}"
        ) from exc
    raise SchemaError(f"unsupported partition column type {type_to_json_value(type)!r}")


def serialize_partition_value(value: object, type: DataType) -> str | None:
    """Format a Python value for ``partitionValues`` (``None`` stays NULL).

    >>> serialize_partition_value(Decimal("1.5"), DecimalType(5, 2))
    '1.50'
    >>> serialize_partition_value(dt.datetime(2021, 1, 1, 10, 0), PrimitiveType("timestamp"))
    '2021-01-01 10:00:00.000000'
    """
    if value is None:
        return None
    if isinstance(type, DecimalType):
        dec = value if isinstance(value, Decimal) else Decimal(str(value))
        return format(dec.quantize(Decimal(1).scaleb(-type.scale)), "f")
    if not isinstance(type, PrimitiveType):
        raise SchemaError(f"a {type_to_json_value(type)} column cannot be a partition column")
    name = type.name
    if name == "boolean":
        return "true" if value else "false"
    if name in ("float", "double"):
        number = float(value)  # type: ignore[arg-type]
        if number != number:
            return "NaN"
        if number in (float("inf"), float("-inf")):
            return "Infinity" if number > 0 else "-Infinity"
        return repr(number)
    if name in ("timestamp", "timestamp_ntz") and isinstance(value, dt.datetime):
        if name == "timestamp" and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if name == "date" and isinstance(value, dt.date):
        return value.isoformat()
    if name == "binary" and isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if name in _INTEGRAL and isinstance(value, bool):
        raise SchemaError(f"boolean {value!r} is not a valid {name} partition value")
    if name in _INTEGRAL:
        return str(int(value))  # type: ignore[call-overload]
    if name == "string" or name.startswith("string collate"):
        # Delta cannot tell an empty string from NULL in partitionValues; Spark stores NULL.
        return str(value) or None
    raise SchemaError(f"cannot store {value!r} as a {name} partition value")
