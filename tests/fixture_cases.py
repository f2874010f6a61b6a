"""Expected rows of every fixture table under ../shared/fixtures, per version.

Built from the rules each EXPECTED.md states (row sets, not only counts); an int means the
EXPECTED.md gives only a row count for that version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rows = list[tuple[Any, ...]]


def ids(values: Any) -> Rows:
    return [(v,) for v in values]


def dv_partitioned(version: int) -> Rows:
    # x in 0..49 as (x % 10, x, "foo" + x % 5); version k deleted col1 = 0, 2, .., 2(k-1).
    return [(x % 10, x, f"foo{x % 5}") for x in range(50) if not (x % 2 == 0 and x < 2 * version)]


LARGE_V0 = set(range(2000))
LARGE = {
    0: LARGE_V0,
    1: LARGE_V0 - {0, 180, 300, 700, 1800},
    2: LARGE_V0 - {0, 180, 1800},
    3: LARGE_V0 - {0, 180, 1800, 300, 250, 350, 900, 1353, 1567},
    4: LARGE_V0 - {0, 180, 1800, 300, 250, 350, 1353},
}
PLARGE = {
    0: LARGE_V0,
    1: LARGE_V0 - {0, 180, 308, 225, 756, 1007, 1503},
    2: LARGE_V0 - {0, 180, 225, 1007, 1503},
    3: LARGE_V0 - {0, 180, 225, 1007, 1503, 300, 257, 399, 786, 1353, 1567, 1800},
    4: LARGE_V0 - {0, 180, 225, 1007, 1503, 300, 257, 399, 786, 1800},
}
DELETION_LOGS = {
    v: [i for i in range(10, 110) if not (v >= 3 and i == 12) and not (v >= 4 and i == 89)]
    for v in range(21)
}
CDF_COUNTS = [1, 5, 4, 4, 5, 3, 3, 4, 5, 5, 4, 4, 4, 4, 6, 8, 6, 6, 8, 8, 8, 8, 8, 8, 2, 5]

CASES: list[tuple[str, int, Callable[[], Rows] | int]] = [
    ("delta-golden/basic-dv-no-checkpoint", 0, lambda: ids(range(10))),
    ("delta-golden/basic-dv-no-checkpoint", 1, lambda: ids(range(2, 10))),
    ("delta-golden/basic-dv-with-checkpoint", 0, lambda: ids(range(500))),
    ("delta-golden/basic-dv-with-checkpoint", 46, lambda: ids(i for i in range(500) if i % 11)),
    ("delta-golden/log-replay-dv-key-cases", 0, lambda: ids(range(50))),
    ("delta-golden/log-replay-dv-key-cases", 1, lambda: ids(range(1, 50))),
    (
        "delta-golden/log-replay-dv-key-cases",
        2,
        lambda: ids(i for i in range(50) if i not in (0, 7)),
    ),
    (
        "delta-golden/log-replay-dv-key-cases",
        3,
        lambda: ids(i for i in range(50) if i not in (0, 7, 14)),
    ),
    *[
        ("delta-golden/dv-partitioned-with-checkpoint", v, (lambda v=v: dv_partitioned(v)))
        for v in (0, 1, 9, 10, 11, 15)
    ],
    ("delta-golden/dv-with-columnmapping", 15, lambda: dv_partitioned(15)),
    ("delta-golden/dv-with-columnmapping", 0, lambda: dv_partitioned(0)),
    ("delta-golden/table-with-dv-small", 0, lambda: ids(range(10))),
    ("delta-golden/table-with-dv-small", 1, lambda: ids(range(1, 9))),
    *[("delta-golden/table-with-dv-large", v, (lambda v=v: ids(LARGE[v]))) for v in range(5)],
    *[
        (
            "delta-golden/partitioned-table-with-dv-large",
            v,
            (lambda v=v: [(i, i % 10) for i in PLARGE[v]]),
        )
        for v in range(5)
    ],
    ("delta-golden/multi-part-checkpoint", 0, lambda: ids([0])),
    ("delta-golden/multi-part-checkpoint", 1, lambda: ids([0, *range(30)])),
    ("delta-golden/v2-checkpoint-parquet", 0, list),
    ("delta-golden/v2-checkpoint-parquet", 2, lambda: ids(range(10))),
    ("delta-golden/time-travel-partition-changes-b", 0, lambda: [(i, i % 5) for i in range(10)]),
    (
        "delta-golden/time-travel-partition-changes-b",
        1,
        lambda: [(i, i % 2) for i in range(10, 20)],
    ),
    ("delta-rs/table-with-dv-small", 0, lambda: ids(range(10))),
    ("delta-rs/table-with-dv-small", 1, lambda: ids(range(1, 9))),
    *[
        ("delta-rs/simple_table_with_checkpoint", v, (lambda v=v: ids(range(v + 1))))
        for v in range(10)
    ],
    ("delta-rs/simple_table_with_checkpoint", 10, lambda: ids([0, 0, *range(1, 10)])),
    (
        "delta-rs/cdf-table-with-cdc-and-dvs",
        25,
        lambda: [
            (0, "new"),
            (1, "after-large-delete"),
            (2, ""),
            (10, "merge1-insert"),
            (12, "merge2-insert"),
        ],
    ),
    *[("delta-rs/cdf-table-with-cdc-and-dvs", v, n) for v, n in enumerate(CDF_COUNTS)],
]


def expected_rows(expected: Callable[[], Rows] | int) -> Rows | int:
    return expected if isinstance(expected, int) else sorted(expected())
