"""Stats every reader trusts: each Spark type, with edge values, through every DML kind.

Two tables (numbers and text; times and nested types) go through INSERT (two files),
UPDATE, DELETE, MERGE and OPTIMIZE. Then, at every version, DuckDB's delta extension and
deltalake answer predicates that their min/max/nullCount file skipping decides
(``col = <max>``, ``col > <just below max>``, ``IS NULL``...), and must return exactly the
ids Spark returns for the same predicate over the same rows. The expected rows are kept in
Python from the inserted values and evaluated by Spark on an in-memory DataFrame: txsql's
reader is not involved. Every commit must also be strict JSON (deltalake refuses a bare
``Infinity``).
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

import txsql
from tests.interop.readers import duckdb_connection

pytestmark = [pytest.mark.spark, pytest.mark.interop]

F32_MAX = struct.unpack("f", struct.pack("f", 3.4028235e38))[0]
F32_TINY = struct.unpack("f", struct.pack("f", 1e-45))[0]
INF, NAN = float("inf"), float("nan")
# Written out: Decimal arithmetic would round to the context's 28 digits.
DL_MAX = Decimal("99999999999999999999.999999999999999999")
DL_MIN = Decimal("-99999999999999999999.999999999999999999")
DL_BIG = Decimal("12345678901234567890.123456789012345678")
DL_BIG_NEG = Decimal("-12345678901234567890.123456789012345678")
DL_BIG_NEXT = Decimal("12345678901234567890.123456789012345679")
LONG_A = "a" * 31 + "b" * 10  # longer than the 32-character stats prefix
LONG_E = "é" * 40  # non-ASCII past the prefix: the max gets the U+10FFFF tie-breaker
LONG_Z = "z" * 33 + "日本"
EMOJI = "zzzz" + "\U0001f600" * 40  # surrogate pairs at the cut
UTC = dt.timezone.utc
TS_MIN = dt.datetime(1, 1, 1)
TS_MAX = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)


@dataclass(frozen=True)
class Pred:
    """One predicate in each engine's SQL (None: same text as Spark's)."""

    spark: str
    duck: str | None = None
    df: str | None = None

    def text(self, engine: str) -> str:
        return {"spark": self.spark, "duck": self.duck, "df": self.df}[engine] or self.spark


def same(text: str) -> Pred:
    return Pred(text)


def dec(column: str, op: str, value: str, scale: str = "38,18") -> Pred:
    return Pred(f"{column} {op} CAST('{value}' AS DECIMAL({scale}))")


def ts(column: str, op: str, value: dt.datetime, utc: bool, df_column: str = "") -> Pred:
    """A timestamp comparison; TIMESTAMP columns compare instants (the session is UTC)."""
    text = value.isoformat(sep=" ", timespec="microseconds")
    arrow = 'Timestamp(Microsecond, Some("UTC"))' if utc else "Timestamp(Microsecond, None)"
    return Pred(
        f"{column} {op} {'TIMESTAMP' if utc else 'TIMESTAMP_NTZ'}'{text}'",
        f"{column} {op} {'TIMESTAMPTZ' if utc else 'TIMESTAMP'} '{text}{'+00' if utc else ''}'",
        f"{df_column or column} {op} arrow_cast('{text.replace(' ', 'T')}', '{arrow}')",
    )


def int_preds(column: str, bits: int) -> list[Pred]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return [
        same(f"{column} = {low}"),
        same(f"{column} = {high}"),
        same(f"{column} > {high - 1}"),
        same(f"{column} < {low + 1}"),
        same(f"{column} = 5"),
        same(f"{column} < 0"),
        same(f"{column} IS NULL"),
    ]


@dataclass
class Group:
    """A table of one type group and the statements it goes through."""

    name: str
    schema: str  # Spark DDL of the columns, ``id INT`` first
    first: list[tuple[Any, ...]]
    second: list[tuple[Any, ...]]
    update_sql: str  # SET clause of ``UPDATE ... WHERE id = update_id``
    update_id: int
    update_values: dict[str, Any]
    delete_id: int
    merge_rows: list[tuple[Any, ...]]  # MERGE ... UPDATE SET * / INSERT * source
    preds: list[Pred] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return [c.strip().split(" ")[0] for c in _split_top(self.schema)]


def _split_top(ddl: str) -> Iterator[str]:
    depth, start = 0, 0
    for i, ch in enumerate(ddl):
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            yield ddl[start:i]
            start = i + 1
    yield ddl[start:]


NUMBERS = Group(
    name="numbers",
    schema="id INT, ti TINYINT, si SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, "
    "ds DECIMAL(9,2), dl DECIMAL(38,18)",
    first=[
        (1, -128, -32768, -(2**31), -(2**63), -F32_MAX, -INF, Decimal("-9999999.99"), DL_MIN),
        (2, 0, 0, 0, 0, -0.0, -0.0, Decimal("0.00"), Decimal(0)),
        (3, None, None, None, None, None, None, None, None),
        (4, 5, 5, 5, 5, 1.5, NAN, Decimal("1.25"), DL_BIG),
    ],
    second=[
        (5, 127, 32767, 2**31 - 1, 2**63 - 1, F32_MAX, INF, Decimal("9999999.99"), DL_MAX),
        (6, 1, 1, 1, 1, 0.0, 0.0, Decimal("0.01"), Decimal("0.000000000000000001")),
        (7, -1, -1, -1, -1, 0.25, 2.5, Decimal("-0.01"), DL_BIG_NEXT),
    ],
    update_sql=f"d = CAST('1E308' AS DOUBLE), dl = CAST('{DL_BIG_NEG}' AS DECIMAL(38,18))",
    update_id=6,
    update_values={"d": 1e308, "dl": DL_BIG_NEG},
    delete_id=2,  # the file keeps DL_BIG as its max, now with a DV
    merge_rows=[
        (7, -1, -1, -1, -1, -0.0, NAN, Decimal("-0.01"), Decimal("-1E-18")),
        (8, 100, 1000, 100000, 10**12, F32_TINY, -1e-300, Decimal("0.05"), Decimal("1E-18")),
    ],
    preds=[
        *int_preds("ti", 8),
        *int_preds("si", 16),
        *int_preds("i", 32),
        *int_preds("bi", 64),
        same("f = CAST('3.4028235E38' AS FLOAT)"),
        same("f = CAST('-3.4028235E38' AS FLOAT)"),
        same("f > CAST('3.4E38' AS FLOAT)"),
        same("f < CAST('-3.4E38' AS FLOAT)"),
        same("f = CAST(0 AS FLOAT)"),
        same("f > CAST(0 AS FLOAT)"),
        same("f IS NULL"),
        same("d = CAST('Infinity' AS DOUBLE)"),
        same("d = CAST('-Infinity' AS DOUBLE)"),
        same("d > CAST('1E300' AS DOUBLE)"),
        same("d < CAST('-1E300' AS DOUBLE)"),
        same("d > CAST(5 AS DOUBLE)"),  # NaN is above every number, in all three engines
        same("d = CAST(0 AS DOUBLE)"),
        same("d < CAST(0 AS DOUBLE)"),
        same("d IS NULL"),
        dec("ds", "=", "9999999.99", "9,2"),
        dec("ds", "=", "-9999999.99", "9,2"),
        dec("ds", ">", "9999999.98", "9,2"),
        dec("ds", "<", "-9999999.98", "9,2"),
        same("ds IS NULL"),
        dec("dl", ">", "12345678901234567500"),
        dec("dl", "=", str(DL_BIG)),
        dec("dl", "=", str(DL_MAX)),
        dec("dl", "=", str(DL_MIN)),
        dec("dl", "<", "-12345678901234567500"),
        dec("dl", "=", "0.000000000000000001"),
        same("dl IS NULL"),
    ],
)

TEXT = Group(
    name="text",
    schema="id INT, s STRING, b BINARY, bo BOOLEAN",
    first=[
        (1, "", b"", False),
        (2, LONG_A, b"\x00\xff", True),
        (3, None, None, None),
        (4, "日本語", b"\xff" * 40, True),
    ],
    second=[
        (5, LONG_E, b"x", False),
        (6, "a", None, None),
        (7, LONG_Z, b"\x00", True),
    ],
    update_sql="s = '" + "ÿ" * 35 + "'",
    update_id=6,
    update_values={"s": "ÿ" * 35},
    delete_id=2,
    merge_rows=[(7, EMOJI, b"\x00", True), (8, "Z", b"", False)],
    preds=[
        same("s = ''"),
        same(f"s = '{LONG_A}'"),
        same(f"s > '{LONG_A[:32]}'"),
        same(f"s = '{LONG_E}'"),
        same(f"s >= '{LONG_E}'"),
        same(f"s > '{'z' * 33}'"),
        same(f"s = '{LONG_Z}'"),
        same(f"s = '{EMOJI}'"),
        same("s > 'zzzz\U0001f600'"),
        same("s = '" + "ÿ" * 35 + "'"),
        same("s = '日本語'"),
        same("s < 'a'"),
        same("s IS NULL"),
        Pred("b = X'00FF'", "b = '\\x00\\xFF'::BLOB"),
        same("b IS NULL"),
        same("bo = true"),
        same("bo = false"),
        same("bo IS NULL"),
    ],
)

TS_MID = dt.datetime(2024, 1, 1, 12, 0, 0, 123456)
TS_NEG = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)


def _times(value: dt.datetime | None) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(TIMESTAMP, TIMESTAMP_NTZ) values for one wall-clock time (TIMESTAMP in UTC)."""
    return (None, None) if value is None else (value.replace(tzinfo=UTC), value)


def _time_row(id_: int, day: dt.date | None, value: dt.datetime | None) -> tuple[Any, ...]:
    return (id_, day, *_times(value))


TIMES = Group(
    name="times",
    schema="id INT, dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ",
    first=[
        _time_row(1, dt.date(1, 1, 1), TS_MIN),
        _time_row(2, dt.date(2024, 2, 29), TS_MID),
        _time_row(3, None, None),
        _time_row(4, dt.date(1969, 12, 31), TS_NEG),
    ],
    second=[
        _time_row(5, dt.date(9999, 12, 31), TS_MAX),
        _time_row(6, dt.date(1970, 1, 1), dt.datetime(1970, 1, 1, 0, 0, 0, 1)),
        _time_row(7, dt.date(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 500)),
    ],
    update_sql="ts = TIMESTAMP'2024-06-30 12:34:56.789999', "
    "ntz = TIMESTAMP_NTZ'2024-06-30 12:34:56.789999'",
    update_id=6,
    update_values=dict(zip(("ts", "ntz"), _times(dt.datetime(2024, 6, 30, 12, 34, 56, 789999)))),
    delete_id=2,
    merge_rows=[
        _time_row(7, dt.date(2000, 1, 2), dt.datetime(2030, 1, 1, 0, 0, 0, 999999)),
        _time_row(8, dt.date(1, 1, 2), dt.datetime(1, 1, 1, 0, 0, 0, 1)),
    ],
    preds=[
        same("dt = DATE'9999-12-31'"),
        same("dt < DATE'0002-01-01'"),
        same("dt = DATE'2024-02-29'"),
        same("dt IS NULL"),
        *[
            p
            for column, utc in (("ts", True), ("ntz", False))
            for p in (
                ts(column, "=", TS_MAX, utc),
                ts(column, ">", dt.datetime(9999, 12, 31, 23, 59, 59, 999000), utc),
                ts(column, "=", TS_MID, utc),
                ts(column, ">", dt.datetime(2024, 1, 1, 12, 0, 0, 123000), utc),
                ts(column, "=", TS_NEG, utc),
                ts(column, ">", dt.datetime(1969, 12, 31, 23, 59, 59, 999000), utc),
                ts(column, "<", dt.datetime(1, 1, 1, 0, 0, 0, 1000), utc),
                ts(column, ">", dt.datetime(2030, 1, 1, 0, 0, 0, 999000), utc),
                same(f"{column} IS NULL"),
            )
        ],
    ],
)


def _nested_row(id_: int, st: tuple[Any, ...] | None, ar: Any, mp: Any) -> tuple[Any, ...]:
    return (id_, st, ar, mp)


NESTED = Group(
    name="nested",
    schema="id INT, st STRUCT<a: INT, b: STRING, t: TIMESTAMP_NTZ>, ar ARRAY<INT>, "
    "mp MAP<STRING, INT>",
    first=[
        _nested_row(1, (2**31 - 1, LONG_A, TS_MAX), [1, 2], {"k": 1}),
        _nested_row(2, None, None, None),
        _nested_row(3, (None, "x", None), [], {}),
        _nested_row(4, (-(2**31), "", TS_MIN), [None], {"z": None}),
    ],
    second=[
        _nested_row(5, (0, "é", TS_MID), [2**31 - 1], {"a": -1}),
        _nested_row(6, (3, "q", None), [5], {"q": 5}),
        _nested_row(7, (9, "w", TS_NEG), None, {"w": 0}),
    ],
    update_sql="st = named_struct('a', 7, 'b', 'y', 't', "
    "TIMESTAMP_NTZ'2024-01-01 00:00:00.000001')",
    update_id=6,
    update_values={"st": (7, "y", dt.datetime(2024, 1, 1, 0, 0, 0, 1))},
    delete_id=2,
    merge_rows=[
        _nested_row(7, (1, "é", TS_MID), [3], None),
        _nested_row(8, (-5, LONG_E, dt.datetime(2030, 1, 1, 0, 0, 0, 999999)), None, {"b": 2}),
    ],
    preds=[
        Pred("st.a = 2147483647", df="st['a'] = 2147483647"),
        Pred("st.a = -2147483648", df="st['a'] = -2147483648"),
        Pred("st.a > 2147483646", df="st['a'] > 2147483646"),
        Pred("st.a < 0", df="st['a'] < 0"),
        Pred("st.a IS NULL", df="st['a'] IS NULL"),
        Pred(f"st.b = '{LONG_A}'", df=f"st['b'] = '{LONG_A}'"),
        Pred(f"st.b >= '{LONG_E}'", df=f"st['b'] >= '{LONG_E}'"),
        ts("st.t", "=", TS_MAX, False, "st['t']"),
        ts("st.t", ">", dt.datetime(2030, 1, 1, 0, 0, 0, 999000), False, "st['t']"),
        ts("st.t", "<", dt.datetime(1, 1, 1, 0, 0, 0, 1000), False, "st['t']"),
        same("st IS NULL"),
        same("ar IS NULL"),
        same("mp IS NULL"),
    ],
)


def combine(name: str, a: Group, b: Group) -> Group:
    """One table holding both groups' columns (same ids, same statements): fewer Spark
    jobs, each statement still touching every type."""
    assert (a.update_id, a.delete_id) == (b.update_id, b.delete_id)

    def zipped(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]) -> list[Any]:
        assert [r[0] for r in left] == [r[0] for r in right]
        return [(*x, *y[1:]) for x, y in zip(left, right)]

    return Group(
        name=name,
        schema=a.schema + ", " + b.schema.removeprefix("id INT, "),
        first=zipped(a.first, b.first),
        second=zipped(a.second, b.second),
        update_sql=f"{a.update_sql}, {b.update_sql}",
        update_id=a.update_id,
        update_values={**a.update_values, **b.update_values},
        delete_id=a.delete_id,
        merge_rows=zipped(a.merge_rows, b.merge_rows),
        preds=[*a.preds, *b.preds],
    )


GROUPS = [combine("scalars", NUMBERS, TEXT), combine("temporal", TIMES, NESTED)]


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


def assert_strict_json_log(path: Path) -> None:
    """Every commit line, and every stats string in it, parses as strict JSON."""
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line, parse_constant=_reject_constant)
            for kind in ("add", "remove"):
                stats = (action.get(kind) or {}).get("stats")
                if stats is not None:
                    json.loads(stats, parse_constant=_reject_constant)


def spark_expected(
    spark: Any, group: Group, models: dict[int, list[tuple[Any, ...]]]
) -> dict[int, list[set[int]]]:
    """Ids each predicate selects at each version, evaluated by Spark over the expected
    rows of that version (one job for every version and predicate)."""
    rows = [(version, *row) for version, model in models.items() for row in model]
    df = spark.createDataFrame(rows, f"version INT, {group.schema}")
    flags = [f"coalesce(({p.spark}), false) AS p{i}" for i, p in enumerate(group.preds)]
    out = {version: [set[int]() for _ in group.preds] for version in models}
    for row in df.selectExpr("version", "id", *flags).collect():
        for i in range(len(group.preds)):
            if row[i + 2]:
                out[row[0]][i].add(row[1])
    return out


def _union(group: Group, engine: str, scan: str) -> str:
    # One filtered scan per predicate: each branch is pruned with its own predicate.
    return " UNION ALL ".join(
        f"SELECT {i} AS k, id FROM {scan} WHERE {p.text(engine)}" for i, p in enumerate(group.preds)
    )


def _by_predicate(group: Group, rows: list[tuple[Any, Any]]) -> list[set[int]]:
    out: list[set[int]] = [set() for _ in group.preds]
    for k, id_ in rows:
        out[k].add(id_)
    return out


def duckdb_answers(group: Group, path: str, version: int) -> list[set[int]]:
    con = duckdb_connection()
    try:
        scan = f"delta_scan('{path}', version => {version})"
        return _by_predicate(group, con.execute(_union(group, "duck", scan)).fetchall())
    finally:
        con.close()


def deltalake_answers(group: Group, path: str, version: int) -> list[set[int]]:
    table = DeltaTable(path, version=version)
    query = QueryBuilder().register("t", table).execute(_union(group, "df", "t"))
    result = pa.table(query.read_all())
    return _by_predicate(group, list(zip(*(c.to_pylist() for c in result.columns))))


def _updated(group: Group, row: tuple[Any, ...]) -> tuple[Any, ...]:
    columns = group.columns
    values = list(row)
    for name, value in group.update_values.items():
        values[columns.index(name)] = value
    return tuple(values)


def statements(group: Group, table: str) -> Iterator[tuple[str, Callable[[dict[int, Any]], None]]]:
    """(statement, the same change applied to the expected rows) for each version."""

    def add(rows: list[tuple[Any, ...]]) -> Callable[[dict[int, Any]], None]:
        return lambda model: model.update({r[0]: r for r in rows})

    def update(model: dict[int, Any]) -> None:
        model[group.update_id] = _updated(group, model[group.update_id])

    yield f"INSERT INTO {table} SELECT * FROM {group.name}_first", add(group.first)
    yield f"INSERT INTO {table} SELECT * FROM {group.name}_second", add(group.second)
    yield f"UPDATE {table} SET {group.update_sql} WHERE id = {group.update_id}", update
    yield f"DELETE FROM {table} WHERE id = {group.delete_id}", lambda m: m.pop(group.delete_id)
    merge = (
        f"MERGE INTO {table} AS t USING {group.name}_merge AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    yield merge, add(group.merge_rows)
    yield f"OPTIMIZE {table}", lambda model: None


@pytest.mark.parametrize("group", GROUPS, ids=[g.name for g in GROUPS])
def test_readers_prune_by_txsql_stats_like_spark_filters(
    spark: Any, tmp_path: Path, group: Group
) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    path = tmp_path / group.name
    table = f"delta.`{path}`"
    for suffix, rows in (("first", group.first), ("second", group.second)):
        spark.createDataFrame(rows, group.schema).createOrReplaceTempView(f"{group.name}_{suffix}")
    spark.createDataFrame(group.merge_rows, group.schema).createOrReplaceTempView(
        f"{group.name}_merge"
    )
    s.sql(f"CREATE TABLE {table} ({group.schema})")
    model: dict[int, Any] = {}
    models: dict[int, list[tuple[Any, ...]]] = {}
    done: dict[int, str] = {}
    for statement, change in statements(group, table):
        version = s.sql(statement).version
        assert version is not None, statement
        change(model)
        models[version], done[version] = list(model.values()), statement
    assert_strict_json_log(path)
    expected = spark_expected(spark, group, models)
    for version, statement in done.items():  # every version, read by time travel
        for engine, answers in (("duck", duckdb_answers), ("df", deltalake_answers)):
            got = answers(group, str(path), version)
            wrong = [
                f"{p.text(engine)}: {sorted(g)} != {sorted(e)}"
                for p, g, e in zip(group.preds, got, expected[version])
                if g != e
            ]
            assert not wrong, f"{engine} after `{statement[:40]}...` (v{version}): {wrong}"
