"""``add.stats_parsed``: the stats JSON of each file as a typed struct in checkpoints.

With ``delta.checkpoint.writeStatsAsStruct`` a checkpoint's ``add`` rows carry
``stats_parsed``, which mirrors the JSON (PROTOCOL.md "Per-file Statistics") with real
types: ``numRecords`` long, ``minValues``/``maxValues`` typed like the data columns,
``nullCount`` longs, ``tightBounds`` boolean; physical names under column mapping and
nested structs nested. The layout follows Delta Spark's ``StatisticsCollection.statsSchema``:
the columns that get stats are the data columns (partition columns never do), the first
``delta.dataSkippingNumIndexedCols`` leaves or those in ``delta.dataSkippingStatsColumns``;
min/max exist only for the types Delta bounds (numbers, strings, dates, timestamps), while
every such leaf has a null count.

The struct is derived from the JSON with the *current* schema, so stats written before a
type change (type widening) are cast to the wider type, and a value that does not fit it
(or cannot be parsed) becomes null: a missing bound only costs skipping, a wrong one
would skip files that match.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from txsql.log import properties
from txsql.log.actions import Metadata
from txsql.log.predicate_values import stat_value
from txsql.log.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructField,
    StructType,
    parse_schema,
    physical_name,
)

Path = tuple[str, ...]

BOUNDED_TYPES: dict[str, pa.DataType] = {
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_INT_BITS = {"long": 64, "integer": 32, "short": 16, "byte": 8}


@dataclass(frozen=True)
class StatsLeaf:
    """One column that gets stats: its physical path and Delta type."""

    path: Path
    type: DataType

    @property
    def bounds_type(self) -> pa.DataType | None:
        """The Arrow type of its min/max, or None when Delta keeps no bounds for it."""
        t = self.type
        if isinstance(t, DecimalType):
            return pa.decimal128(t.precision, t.scale)
        if isinstance(t, PrimitiveType):
            # A collated string is bounded in binary order, stored as a plain string.
            name = "string" if t.name.startswith("string collate") else t.name
            return BOUNDED_TYPES.get(name)
        return None


@dataclass(frozen=True)
class StatsStruct:
    """The ``stats_parsed`` layout of one table schema and how to fill it from JSON."""

    leaves: tuple[StatsLeaf, ...]
    arrow_type: pa.StructType

    def column(self, stats: Sequence[str | None]) -> pa.Array:
        """``stats_parsed`` of each JSON stats string (null where there is none)."""
        return pa.array([self.row(s) for s in stats], self.arrow_type)

    def row(self, stats: str | None) -> dict[str, Any] | None:
        """One ``stats_parsed`` value in ``pa.array`` shape; keys left out are null.

        >>> layout = stats_struct(Metadata("id", _schema_json('"v"', '"integer"')))
        >>> layout.row('{"numRecords":2,"minValues":{"v":1},"maxValues":{"v":3000000000},'
        ...     '"nullCount":{"v":0}}')
        {'numRecords': 2, 'minValues': {'v': 1}, 'maxValues': {}, 'nullCount': {'v': 0}}
        """
        if not stats:
            return None
        try:
            # Decimal keeps DECIMAL(38, s) bounds exact instead of rounding them via float.
            parsed = json.loads(stats, parse_float=Decimal)
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        out: dict[str, Any] = {}
        num = parsed.get("numRecords")
        if isinstance(num, int) and not isinstance(num, bool):
            out["numRecords"] = num
        for section in ("minValues", "maxValues"):
            if section in self.arrow_type.names and isinstance(parsed.get(section), dict):
                out[section] = _section(parsed[section], self.leaves, _bound)
        if "nullCount" in self.arrow_type.names and isinstance(parsed.get("nullCount"), dict):
            out["nullCount"] = _section(parsed["nullCount"], self.leaves, _null_count)
        tight = parsed.get("tightBounds")
        if isinstance(tight, bool):
            out["tightBounds"] = tight
        return out


def stats_struct(metadata: Metadata) -> StatsStruct:
    """The ``stats_parsed`` layout for ``metadata``'s schema and stats properties."""
    leaves = tuple(stats_leaves(metadata))
    fields: list[tuple[str, pa.DataType]] = [("numRecords", pa.int64())]
    bounded = [(leaf.path, leaf.bounds_type) for leaf in leaves if leaf.bounds_type is not None]
    if bounded:
        bounds = _nest(bounded)
        fields += [("minValues", bounds), ("maxValues", bounds)]
    if leaves:
        fields.append(("nullCount", _nest([(leaf.path, pa.int64()) for leaf in leaves])))
    fields.append(("tightBounds", pa.bool_()))
    return StatsStruct(leaves, pa.struct(fields))


def stats_leaves(metadata: Metadata) -> list[StatsLeaf]:
    """The columns that get stats, in schema order (Delta Spark's selection rules)."""
    conf = metadata.configuration
    mode = properties.column_mapping_mode(conf)
    schema = parse_schema(metadata.schema_string)
    partitions = {p.lower() for p in metadata.partition_columns}
    found: list[tuple[Path, StatsLeaf]] = []

    def walk(fields: Sequence[StructField], logical: Path, phys: Path) -> None:
        for f in fields:
            lpath, ppath = (*logical, f.name.lower()), (*phys, physical_name(f, mode))
            if isinstance(f.type, StructType):
                walk(f.type.fields, lpath, ppath)
            else:
                found.append((lpath, StatsLeaf(ppath, f.type)))

    walk([f for f in schema.fields if f.name.lower() not in partitions], (), ())
    chosen = conf.get(properties.P.DATA_SKIPPING_STATS_COLUMNS)
    if chosen:
        wanted = [tuple(split_column(c.strip().lower())) for c in chosen.split(",") if c.strip()]
        return [leaf for lp, leaf in found if any(lp[: len(w)] == w for w in wanted)]
    limit = properties.data_skipping_num_indexed_cols(conf)
    return [leaf for _, leaf in (found if limit < 0 else found[:limit])]


def split_column(name: str) -> list[str]:
    """Split ``a.`b.c`.d`` into its parts (backquotes protect dots).

    >>> split_column("a.`b.c`.d"), split_column("`x``y`")
    (['a', 'b.c', 'd'], ['x`y'])
    """
    parts, current, quoted, i = [], "", False, 0
    while i < len(name):
        ch = name[i]
        if ch == "`":
            if quoted and name[i + 1 : i + 2] == "`":
                current += "`"
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    return parts


def _nest(leaves: Sequence[tuple[Path, pa.DataType]]) -> pa.StructType:
    """A struct type with one (nested) field per leaf path, in first-seen order."""
    groups: dict[str, list[tuple[Path, pa.DataType]]] = {}
    for path, arrow in leaves:
        groups.setdefault(path[0], []).append((path[1:], arrow))
    fields = []
    for name, members in groups.items():
        if len(members) == 1 and not members[0][0]:
            fields.append((name, members[0][1]))
        else:
            fields.append((name, _nest([(p, a) for p, a in members if p])))
    return pa.struct(fields)


def _section(
    values: dict[str, Any], leaves: Sequence[StatsLeaf], convert: Callable[[Any, StatsLeaf], Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for leaf in leaves:
        raw: Any = values
        for part in leaf.path:
            raw = raw.get(part) if isinstance(raw, dict) else None
        value = convert(raw, leaf)
        if value is None:
            continue
        target = out
        for part in leaf.path[:-1]:
            target = target.setdefault(part, {})
        target[leaf.path[-1]] = value
    return out


def _null_count(raw: Any, leaf: StatsLeaf) -> int | None:
    ok = isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < 2**63
    return raw if ok else None


def _bound(raw: Any, leaf: StatsLeaf) -> Any:
    """A min/max typed like the column now, or None if it does not fit that type."""
    if leaf.bounds_type is None or isinstance(raw, bool):
        return None
    value = stat_value(raw, leaf.type)
    t = leaf.type
    if isinstance(t, DecimalType) and isinstance(value, Decimal):
        return _fit_decimal(value, t)
    name = t.name if isinstance(t, PrimitiveType) else ""
    if name in _INT_BITS and isinstance(value, int):
        limit = 2 ** (_INT_BITS[name] - 1)
        return value if -limit <= value < limit else None
    if isinstance(value, dt.datetime) and name == "timestamp" and value.tzinfo is None:
        return None
    return value


def _fit_decimal(value: Decimal, t: DecimalType) -> Decimal | None:
    """``value`` at ``t``'s scale when that is exact and within its precision."""
    try:
        scaled = value.quantize(Decimal(1).scaleb(-t.scale))
    except InvalidOperation:
        return None
    if scaled != value or len(scaled.as_tuple().digits) > t.precision:
        return None
    return scaled


def _schema_json(name: str, type_json: str) -> str:
    """A one-column schema string (for the examples above)."""
    return (
        '{"type":"struct","fields":[{"name":' + name + ',"type":' + type_json + ","
        '"nullable":true,"metadata":{}}]}'
    )
