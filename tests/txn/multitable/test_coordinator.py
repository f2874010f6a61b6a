"""Finding the coordinator's newest record costs the same whatever the number of records
(issue 20): no listing of the records, a bounded number of name probes from the hint file,
and the right answer from a missing, stale or unreadable hint.

The oracle is the set of record names written here (positions 0..n-1), not txsql's view.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from txsql.storage.filesystem import MemoryFileIO
from txsql.txn.multitable.coordinator import HINT_INTERVAL, Coordinator, GroupRecord

ROOT = "/mem/wh/_txsql_coordinator"


class CountingFileIO:
    """A MemoryFileIO that counts the calls made to it, by method name."""

    def __init__(self) -> None:
        self.inner = MemoryFileIO()
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted


def coordinator_with(records: int) -> CountingFileIO:
    fs = CountingFileIO()
    writer = Coordinator(ROOT, fs)
    for position in range(records):
        assert writer.ratify(GroupRecord(position, f"g{position}", 0, ()))
    fs.calls.clear()
    return fs


def fresh_lookup(fs: CountingFileIO) -> tuple[int, Counter[str]]:
    """What a process that knows nothing yet finds, and the calls it took."""
    fs.calls.clear()
    latest = Coordinator(ROOT, fs).latest_position()
    return latest, Counter(fs.calls)


@pytest.mark.parametrize("records", [40, 1000, 5000])
def test_a_fresh_process_finds_the_newest_record_without_listing(records: int) -> None:
    fs = coordinator_with(records)
    latest, calls = fresh_lookup(fs)
    assert latest == records - 1
    assert calls["list_dir"] == 0, "the records are never listed"
    # From the hint (at most HINT_INTERVAL behind): a few probes, the same for any count.
    assert calls["exists"] <= 2 * math.log2(HINT_INTERVAL) + 6, calls


def test_without_a_hint_the_probes_grow_with_the_logarithm_only() -> None:
    for records in (0, 1, 2, 3, 5, 8, 31, 32, 33, 64, 100, 777):
        fs = coordinator_with(records)
        if records > HINT_INTERVAL:
            fs.inner.delete(f"{ROOT}/latest_position.hint")
        latest, calls = fresh_lookup(fs)
        assert latest == records - 1, records
        assert calls["list_dir"] == 0
        assert calls["exists"] <= 2 * math.log2(records + 2) + 6, (records, calls)


@pytest.mark.parametrize("hint", [b"not json", b'{"position": "x"}', b"{}", b'{"position": 3}'])
def test_an_unreadable_or_stale_hint_costs_probes_not_correctness(hint: bytes) -> None:
    fs = coordinator_with(100)
    fs.inner.write(f"{ROOT}/latest_position.hint", hint)
    assert fresh_lookup(fs)[0] == 99


def test_a_known_position_probes_forward_from_itself() -> None:
    fs = coordinator_with(10)
    reader = Coordinator(ROOT, fs)
    reader.mark_published(9)
    fs.calls.clear()
    assert reader.latest_position() == 9
    assert fs.calls == Counter(exists=1), "nothing new: one probe"
    writer = Coordinator(ROOT, fs)
    for position in range(10, 300):
        assert writer.ratify(GroupRecord(position, f"g{position}", 0, ()))
    fs.calls.clear()
    assert reader.latest_position() == 299
    assert fs.calls["exists"] <= 2 * math.log2(300) + 6 and fs.calls["list_dir"] == 0
