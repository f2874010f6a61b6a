"""Small tables using reader features no txsql statement writes: Parquet files written by
pyarrow (at the narrow type, as an old writer left them) or by Spark (shredded VARIANT),
and a log written by hand as PROTOCOL.md lays it out."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def field(name: str, type_: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def changes(*pairs: tuple[str, str, str]) -> dict[str, Any]:
    """``delta.typeChanges`` metadata from (fromType, toType, fieldPath) triples."""
    entries = []
    for old, new, path in pairs:
        entry = {"fromType": old, "toType": new}
        if path:
            entry["fieldPath"] = path
        entries.append(entry)
    return {"delta.typeChanges": entries}


def write_log(root: Path, commits: list[list[dict[str, Any]]]) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for version, actions in enumerate(commits):
        info = {"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE"}}
        lines = [json.dumps(a) for a in [*actions, info]]
        (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def protocol(reader: list[str], writer: list[str]) -> dict[str, Any]:
    return {
        "protocol": {
            "minReaderVersion": 3 if reader else 1,
            "minWriterVersion": 7,
            **({"readerFeatures": reader} if reader else {}),
            "writerFeatures": writer,
        }
    }


def metadata(
    fields: list[dict[str, Any]], partitions: list[str], conf: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metaData": {
            "id": "a1b2c3d4-0000-4000-8000-000000000000",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(struct(*fields)),
            "partitionColumns": partitions,
            "configuration": conf or {},
            "createdTime": 1_700_000_000_000,
        }
    }


def add(root: Path, path: str, partitions: dict[str, str], stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "add": {
            "path": path,
            "partitionValues": partitions,
            "size": (root / path).stat().st_size,
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }
    }


# --- a type-widened table -------------------------------------------------------------

NARROW = [
    field("p", "integer"),
    field("dp", "date"),
    field("f", "float"),
    field("b", "byte"),
    field("s", struct(field("x", "short"), field("y", "decimal(5,2)"))),
    field("a", {"type": "array", "elementType": "short", "containsNull": True}),
    field(
        "m", {"type": "map", "keyType": "string", "valueType": "float", "valueContainsNull": True}
    ),
]
WIDE = [
    field("p", "long", changes(("integer", "long", ""))),
    field("dp", "timestamp_ntz", changes(("date", "timestamp_ntz", ""))),
    field("f", "double", changes(("float", "double", ""))),
    field("b", "decimal(5,2)", changes(("byte", "decimal(5,2)", ""))),
    field(
        "s",
        struct(
            field("x", "integer", changes(("short", "integer", ""))),
            field("y", "decimal(8,3)", changes(("decimal(5,2)", "decimal(8,3)", ""))),
        ),
    ),
    field(
        "a",
        {"type": "array", "elementType": "long", "containsNull": True},
        changes(("short", "integer", "element"), ("integer", "long", "element")),
    ),
    field(
        "m",
        {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
        changes(("float", "double", "value")),
    ),
]
WIDENING = ["typeWidening", "timestampNtz"]


def widened_table(root: Path) -> None:
    """Version 0: narrow schema, one narrow file (partition p=7). Version 1:
    every column widened (metadata only). Version 2: a file written at the wide types."""
    root.mkdir(parents=True)
    (root / "p=7").mkdir()
    old = pa.table(
        {
            "dp": pa.array([dt.date(2024, 9, 9), dt.date(1999, 12, 31)], pa.date32()),
            "f": pa.array([-1.1, 2.5], pa.float32()),
            "b": pa.array([-128, 5], pa.int8()),
            "s": pa.array(
                [{"x": -300, "y": Decimal("-1.25")}, {"x": 2, "y": Decimal("999.99")}],
                pa.struct([("x", pa.int16()), ("y", pa.decimal128(5, 2))]),
            ),
            "a": pa.array([[1, -2], None], pa.list_(pa.int16())),
            "m": pa.array([[("k", -1.1)], []], pa.map_(pa.string(), pa.float32())),
        }
    )
    pq.write_table(old, root / "p=7" / "old.parquet")
    new = pa.table(
        {
            "dp": pa.array([dt.datetime(2024, 9, 10, 12, 34, 56, 123456)], pa.timestamp("us")),
            "f": pa.array([1e300], pa.float64()),
            "b": pa.array([Decimal("123.45")], pa.decimal128(5, 2)),
            "s": pa.array(
                [{"x": 70000, "y": Decimal("12345.678")}],
                pa.struct([("x", pa.int32()), ("y", pa.decimal128(8, 3))]),
            ),
            "a": pa.array([[2**40]], pa.list_(pa.int64())),
            "m": pa.array([[("k", 0.1)]], pa.map_(pa.string(), pa.float64())),
        }
    )
    pq.write_table(new, root / "new.parquet")
    narrow_stats = {
        "numRecords": 2,
        "minValues": {"f": -1.1, "b": -128},
        "maxValues": {"f": 2.5, "b": 5},
        "nullCount": {"f": 0, "b": 0},
    }
    wide_stats = {"numRecords": 1, "minValues": {"f": 1e300}, "maxValues": {"f": 1e300}}
    write_log(
        root,
        [
            [
                protocol(WIDENING, WIDENING),
                metadata(NARROW, ["p"]),
                add(root, "p=7/old.parquet", {"p": "7"}, narrow_stats),
            ],
            [metadata(WIDE, ["p"], {"delta.enableTypeWidening": "true"})],
            [add(root, "new.parquet", {"p": str(2**40)}, wide_stats)],
        ],
    )


# --- a collated table -------------------------------------------------------------------

COLLATED = [
    field("id", "integer"),
    field("name", "string", {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}),
    field("k", "string", {"__COLLATIONS": {"k": "spark.UTF8_LCASE"}}),
]
COLLATED_ROWS = [(1, "abc", "x"), (2, "ABC", "x"), (3, "b", "X"), (4, "Abd", "X")]


def collated_table(root: Path) -> None:
    """Two files, partition ``k`` 'x' and 'X'; names differing only in case."""
    root.mkdir(parents=True)
    actions: list[dict[str, Any]] = [
        protocol([], ["collations", "domainMetadata"]),
        metadata(COLLATED, ["k"]),
    ]
    for k in ("x", "X"):
        rows = [r for r in COLLATED_ROWS if r[2] == k]
        name = f"k={k}.parquet"
        ids, names = [r[0] for r in rows], [r[1] for r in rows]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int32()), "name": names}), root / name)
        stats = {
            "numRecords": 2,
            "minValues": {"name": min(names)},
            "maxValues": {"name": max(names)},
        }
        actions.append(add(root, name, {"k": k}, stats))
    write_log(root, [actions])


# --- a table with shredded VARIANT files ------------------------------------------------

SHREDDED = ['{"a": 1, "b": "x"}', '{"a": "str", "c": [1, 2]}', "7", '{"a": null}', "null"]


def shredded_table(spark: Any, root: Path) -> None:
    """VARIANT values Spark 4.1 writes shredded (typed_value next to value), under a log
    with variantType and variantShredding-preview."""
    staging = root.parent / "staging"
    conf = {
        "spark.sql.variant.writeShredding.enabled": "true",
        "spark.sql.variant.forceShreddingSchemaForTest": "a int, b string",
    }
    before = {k: spark.conf.get(k, None) for k in conf}
    try:
        for k, v in conf.items():
            spark.conf.set(k, v)
        values = ", ".join(f"({i}L, '{text}')" for i, text in enumerate(SHREDDED))
        df = spark.sql(f"SELECT id, parse_json(j) AS v FROM VALUES {values} AS t(id, j)")
        df.coalesce(1).write.parquet(str(staging))
    finally:
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    root.mkdir()
    (part,) = staging.glob("*.parquet")
    shutil.move(str(part), root / "part-0.parquet")
    features = ["variantType", "variantShredding-preview"]
    write_log(
        root,
        [
            [
                protocol(features, features),
                metadata(
                    [field("id", "long"), field("v", "variant")],
                    [],
                    {"delta.enableVariantShredding": "true"},
                ),
                add(root, "part-0.parquet", {}, {"numRecords": len(SHREDDED)}),
            ]
        ],
    )
