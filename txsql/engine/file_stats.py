"""Delta per-file statistics (``stats`` JSON of an ``add``) from Parquet footers.

Kept apart from the write path because these are Delta Spark's rules
(``StatisticsCollection``), not I/O: which leaf columns get stats (the first
``delta.dataSkippingNumIndexedCols`` (32) or those in ``delta.dataSkippingStatsColumns``),
strings cut to a 32-char prefix (the max gets a tie-breaker so it stays an upper bound),
timestamps as ISO strings at millisecond precision (a maximum rounded up so it stays one), no
min/max for boolean, binary, array and map columns, none where NaN makes a float column
unbounded, and a stat omitted where the footer lacks it. The JSON is strict (quoted
infinities, exact decimals). Local and object-store writes both use them.
"""

from __future__ import annotations

import datetime as dt
import io
import math
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from txsql.engine.schema import physical_name
from txsql.engine.spark_types import spark_schema
from txsql.log.actions import Metadata
from txsql.log.checkpoint_stats import split_column
from txsql.log.stats_json import encode_stats

_PREFIX_LENGTH = 32
_ASCII_MAX = 0x7F
_UTF16_MAX = (0xDBFF, 0xDFFF)  # U+10FFFF as a UTF-16 surrogate pair
_NO_MIN_MAX = (BooleanType, BinaryType, ArrayType, MapType)


def stats_leaves(
    schema_json: dict[str, Any], metadata: Metadata
) -> list[tuple[tuple[str, ...], DataType]]:
    """The (physical path, type) of every leaf column that gets stats, in schema order."""
    conf = metadata.configuration
    mode = conf.get("delta.columnMapping.mode", "none").lower()
    schema = spark_schema(schema_json)
    partitions = {p.lower() for p in metadata.partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in partitions]
    leaves: list[tuple[tuple[str, ...], tuple[str, ...], DataType]] = []

    def walk(fields: list[Any], logical: tuple[str, ...], phys: tuple[str, ...]) -> None:
        for f in fields:
            lpath = (*logical, f.name.lower())
            ppath = (*phys, physical_name(f.name, f.metadata, mode))
            if isinstance(f.dataType, StructType):
                walk(f.dataType.fields, lpath, ppath)
            else:
                leaves.append((lpath, ppath, f.dataType))

    walk(data_fields, (), ())
    chosen = conf.get("delta.dataSkippingStatsColumns")
    if chosen:
        wanted = [tuple(split_column(c.strip().lower())) for c in chosen.split(",") if c.strip()]
        return [(p, t) for lp, p, t in leaves if any(lp[: len(w)] == w for w in wanted)]
    limit = int(conf.get("delta.dataSkippingNumIndexedCols", "32"))
    selected = leaves if limit < 0 else leaves[:limit]
    return [(p, t) for _, p, t in selected]


def file_stats(path: str | io.BytesIO, leaves: list[tuple[tuple[str, ...], DataType]]) -> str:
    """Delta stats JSON for one Parquet file (a path or its footer), from its footer."""
    meta = pq.read_metadata(path)
    columns: dict[str, list[Any]] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            columns.setdefault(chunk.path_in_schema, []).append((chunk, group.num_rows))
    mins: dict[str, Any] = {}
    maxes: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path_parts, data_type in leaves:
        if isinstance(data_type, (ArrayType, MapType)):
            continue  # leaf null counts of nested columns are not the column's null count
        chunks = columns.get(".".join(path_parts))
        if chunks is None:
            continue
        null_count, low, high = _combine(chunks)
        if null_count is not None:
            _put(nulls, path_parts, null_count)
        if isinstance(data_type, _NO_MIN_MAX) or low is None or high is None:
            continue
        low_json, high_json = _stat_value(low, data_type, False), _stat_value(high, data_type, True)
        if low_json is not None and high_json is not None:
            _put(mins, path_parts, low_json)
            _put(maxes, path_parts, high_json)
    stats = {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxes, "nullCount": nulls}
    return encode_stats(stats)


def _combine(chunks: list[Any]) -> tuple[int | None, Any, Any]:
    """Null count and min/max over row groups; None where a footer lacks the statistic."""
    null_count: int | None = 0
    low: Any = None
    high: Any = None
    min_max_ok = True
    for chunk, num_rows in chunks:
        st = chunk.statistics
        if st is None or not st.has_null_count:
            null_count = None
        elif null_count is not None:
            null_count += st.null_count
        if st is not None and st.has_min_max and (_is_nan(st.min) or _is_nan(st.max)):
            min_max_ok = False  # NaN compares false with everything: no bound survives it
        elif st is not None and st.has_min_max:
            low = st.min if low is None or st.min < low else low
            high = st.max if high is None or st.max > high else high
        elif not (st is not None and st.has_null_count and st.null_count == num_rows):
            min_max_ok = False  # an all-NULL row group has no min/max and needs none
    return null_count, (low if min_max_ok else None), (high if min_max_ok else None)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _stat_value(value: Any, data_type: DataType, is_max: bool) -> Any:
    """The JSON value of one bound (None: no usable bound)."""
    if isinstance(data_type, StringType):
        text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        return truncate_max(text) if is_max else truncate_min(text)
    if isinstance(data_type, (TimestampType, TimestampNTZType)) and isinstance(value, dt.datetime):
        return timestamp_bound(value, isinstance(data_type, TimestampType), is_max)
    if isinstance(data_type, DateType) and isinstance(value, dt.date):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if isinstance(data_type, DecimalType):
        return Decimal(value) if not isinstance(value, Decimal) else value
    if isinstance(value, float):
        return float_bound(value, is_max)
    if isinstance(value, int):
        return value
    return None


def float_bound(value: float, is_max: bool) -> float | str | None:
    """A FLOAT/DOUBLE bound as Delta Spark writes it, or None when it bounds nothing.

    NaN: Spark orders NaN above every number, so a row group holding one has no numeric
    maximum (and readers disagree on how a NaN bound compares). Infinities are quoted, as
    Delta Spark's JSON writer spells them (a bare ``Infinity`` is not JSON). A zero bound
    covers both zeros: -0.0 as a minimum, 0.0 as a maximum (the Parquet rule), so a reader
    that orders -0.0 below 0.0 still finds both.

    >>> float_bound(float("inf"), True), float_bound(float("-inf"), False)
    ('Infinity', '-Infinity')
    >>> float_bound(0.0, False), float_bound(-0.0, True), float_bound(float("nan"), True)
    (-0.0, 0.0, None)
    """
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return 0.0 if is_max else -0.0
    return value


def timestamp_bound(value: dt.datetime, utc: bool, is_max: bool) -> str | None:
    """A timestamp bound in Delta's millisecond format, rounded outwards.

    Delta stats hold milliseconds. A minimum is truncated; a maximum with a sub-millisecond
    part is rounded up. Delta Spark writes it truncated and relies on readers widening it
    by 1 ms (Delta Spark, delta-kernel and delta-rs do); rounded up it is a true bound for
    any reader, and still one after such widening.

    >>> timestamp_bound(dt.datetime(1, 1, 1, 0, 0, 0, 999), False, False)
    '0001-01-01T00:00:00.000'
    >>> timestamp_bound(dt.datetime(2024, 2, 29, 23, 59, 59, 999001), True, True)
    '2024-03-01T00:00:00.000Z'
    >>> timestamp_bound(dt.datetime.max, True, True) is None
    True
    """
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    truncated = value.replace(microsecond=value.microsecond - value.microsecond % 1000)
    if is_max and truncated != value:
        try:
            truncated += dt.timedelta(milliseconds=1)
        except OverflowError:
            return None  # past 9999-12-31: no bound to give
    v = truncated
    text = (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        f".{v.microsecond // 1000:03d}"
    )
    return text + ("Z" if utc else "")


def truncate_min(text: str, prefix: int = _PREFIX_LENGTH) -> str:
    """Delta's min-string truncation: a prefix of ``prefix`` UTF-16 units, never splitting
    a surrogate pair.

    >>> truncate_min("abcdef", 3)
    'abc'
    """
    units = _utf16(text)
    if len(units) <= prefix:
        return text
    end = prefix + 1 if 0xD800 <= units[prefix - 1] <= 0xDBFF else prefix
    return _from_utf16(units[:end])


def truncate_max(text: str, prefix: int = _PREFIX_LENGTH) -> str | None:
    """Delta Spark's ``truncateMaxStringAgg``: a prefix plus a tie-breaker that keeps it an
    upper bound in UTF-8 order, or None if no bound within twice the prefix exists.

    >>> truncate_max("abcdef", 3)
    'abc\\x7f'
    >>> truncate_max("ab", 3)
    'ab'
    """
    units = _utf16(text)
    if len(units) <= prefix:
        return text
    current = len(_utf16(truncate_min(text, prefix)))
    while current <= 2 * prefix:
        if current >= len(units):
            return text
        if tuple(units[current : current + 2]) == _UTF16_MAX:
            current += 2  # U+10FFFF cannot be exceeded: keep it and look further
        elif units[current] < _ASCII_MAX:
            return _from_utf16(units[:current]) + chr(_ASCII_MAX)
        else:
            return _from_utf16(units[:current]) + "\U0010ffff"
    return None


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _from_utf16(units: list[int]) -> str:
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
