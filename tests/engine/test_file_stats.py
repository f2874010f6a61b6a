"""Per-file stats from footers Spark writes: strict JSON and bounds that really bound."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from txsql.engine import file_stats as fs
from txsql.engine.file_stats import file_stats

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

pytestmark = [pytest.mark.spark]


def _stats_of(spark: Any, tmp_path: Path, select: str) -> dict[str, Any]:
    """Stats of the single file Spark writes for ``select`` (column types from Spark)."""
    df = spark.sql(select).coalesce(1)
    out = tmp_path / "data"
    df.write.parquet(str(out))
    (path,) = out.glob("*.parquet")
    leaves: list[tuple[tuple[str, ...], DataType]] = [
        ((f.name,), f.dataType) for f in df.schema.fields
    ]
    text = file_stats(str(path), leaves)
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in {text}"))


def test_infinities_are_quoted_and_a_nan_leaves_no_bounds(spark: Any, tmp_path: Path) -> None:
    stats = _stats_of(
        spark,
        tmp_path,
        "SELECT * FROM VALUES (CAST('Infinity' AS DOUBLE), CAST('-Infinity' AS FLOAT), "
        "CAST('NaN' AS DOUBLE)), (1.0D, 2.0F, 2.0D) AS t(d, f, n)",
    )
    # Delta Spark's JSON writer quotes non-finite numbers; a bare Infinity is not JSON.
    assert stats["minValues"] == {"d": 1.0, "f": "-Infinity"}
    assert stats["maxValues"] == {"d": "Infinity", "f": 2.0}
    # Spark orders NaN above every number: a max of 2.0 would hide the NaN row from
    # `n > 5`, so n gets no min/max at all (its null count stays).
    assert stats["nullCount"]["n"] == 0


def test_zero_bounds_cover_both_zeros(spark: Any, tmp_path: Path) -> None:
    stats = _stats_of(spark, tmp_path, "SELECT * FROM VALUES (0.0D, -0.0D), (0.0D, -1.0D) t(a, b)")
    assert str(stats["minValues"]["a"]) == "-0.0" and str(stats["maxValues"]["a"]) == "0.0"
    assert stats["minValues"]["b"] == -1.0 and str(stats["maxValues"]["b"]) == "0.0"


def test_timestamp_maxima_round_up_to_the_millisecond(spark: Any, tmp_path: Path) -> None:
    stats = _stats_of(
        spark,
        tmp_path,
        "SELECT * FROM VALUES (TIMESTAMP'2024-01-01 12:00:00.123456', "
        "TIMESTAMP_NTZ'0001-01-01 00:00:00.000999', DATE'0001-01-01'), "
        "(TIMESTAMP'2024-01-01 12:00:00.100000', TIMESTAMP_NTZ'0001-01-01 00:00:00', "
        "DATE'9999-12-31') AS t(ts, ntz, d)",
    )
    assert stats["minValues"] == {
        "ts": "2024-01-01T12:00:00.100Z",
        "ntz": "0001-01-01T00:00:00.000",
        "d": "0001-01-01",
    }
    assert stats["maxValues"] == {
        "ts": "2024-01-01T12:00:00.124Z",
        "ntz": "0001-01-01T00:00:00.001",
        "d": "9999-12-31",
    }


def test_no_timestamp_bound_past_the_last_millisecond(spark: Any, tmp_path: Path) -> None:
    stats = _stats_of(
        spark, tmp_path, "SELECT TIMESTAMP_NTZ'9999-12-31 23:59:59.999999' AS t, 1 AS i"
    )
    assert "t" not in stats["maxValues"] and stats["maxValues"]["i"] == 1


def _chunk(low: float, high: float, rows: int = 2) -> tuple[Any, int]:
    statistics = SimpleNamespace(
        has_null_count=True, null_count=0, has_min_max=True, min=low, max=high
    )
    return SimpleNamespace(statistics=statistics), rows


def test_a_nan_in_any_row_group_drops_the_bounds() -> None:
    # NaN compares false with everything: after a row group with max 5.0 a later NaN max
    # would not replace it, and the file would claim max 5.0.
    nan = float("nan")
    for chunks in ([_chunk(1.0, 5.0), _chunk(2.0, nan)], [_chunk(nan, nan), _chunk(1.0, 5.0)]):
        _, low, high = fs._combine(chunks)
        assert low is None and high is None
    assert fs._combine([_chunk(1.0, 5.0), _chunk(-2.0, 3.0)])[1:] == (-2.0, 5.0)
