"""The literal deleted-rows filter's keys are the ones Spark computes for the same rows."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from txsql.engine.scan_files import row_keys

pytestmark = pytest.mark.spark


def test_row_keys_match_spark_including_crcs_with_the_high_bit(spark: Any) -> None:
    paths = [f"p={i}/part-{i:05d}.parquet" for i in range(40)]
    high = [p for p in paths if zlib.crc32(p.encode()) >= 2**31]
    low = [p for p in paths if zlib.crc32(p.encode()) < 2**31]
    assert high and low  # both halves of the CRC range are exercised
    rows = [(p, r) for p in (high[0], low[0]) for r in (0, 7, 2**31 + 3, 2**32 - 1)]
    df = spark.createDataFrame(rows, "f string, r bigint")
    got = df.selectExpr("f", "r", "shiftleft(crc32(cast(f AS BINARY)), 32) | r AS k").collect()
    ours = {
        (p, r): int(row_keys(zlib.crc32(p.encode()), np.array([r], np.uint64))[0]) for p, r in rows
    }
    assert {(x.f, x.r): x.k for x in got} == ours
