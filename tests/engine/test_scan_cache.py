"""The scan layer's caches are bounded LRUs: a long session keeps at most their limits.

No Spark needed: the cached values only need ``unpersist`` (a stand-in records it).
"""

from __future__ import annotations

from typing import Any

from txsql.engine.scan_cache import DeletedRowsCache, ScanCache, SparkPathCache


class _Frame:
    """Stands in for a DataFrame: records whether it was released."""

    def __init__(self) -> None:
        self.released = False

    def cache(self) -> _Frame:
        return self

    def unpersist(self) -> None:
        self.released = True


def test_scan_cache_keeps_the_newest_plans() -> None:
    cache = ScanCache(max_entries=4)
    frames: list[Any] = [_Frame() for _ in range(10)]
    for i, frame in enumerate(frames):
        cache.put((i,), frame)
        cache.get((0,))  # used again and again: stays
    kept = [i for i in range(10) if cache.get((i,)) is not None]
    assert kept == [0, 7, 8, 9]


def test_deleted_rows_cache_is_bounded_by_entries_and_rows_and_releases() -> None:
    cache = DeletedRowsCache(max_entries=3, max_rows=100)
    frames: list[Any] = [_Frame() for _ in range(6)]
    for i, frame in enumerate(frames[:4]):
        cache.put((i,), frame, 10)
    assert cache.get((0,)) is None and frames[0].released  # over 3 entries
    cache.put((4,), frames[4], 90)  # 10 + 10 + 90 > 100 rows: the oldest go
    assert [i for i in range(5) if cache.get((i,)) is not None] == [3, 4]
    assert all(frames[i].released for i in (0, 1, 2))
    assert cache.put((5,), frames[5], 101) is frames[5]  # too big to keep at all
    assert cache.get((5,)) is None and not frames[5].released


def test_spark_path_cache_is_bounded() -> None:
    cache = SparkPathCache(max_entries=5)
    cache.put(1, {f"/t/{i}": f"file:/t/{i}" for i in range(8)})
    assert cache.get_all(1, ["/t/0"]) is None
    assert cache.get_all(1, [f"/t/{i}" for i in range(3, 8)]) == [
        f"file:/t/{i}" for i in range(3, 8)
    ]
