"""The catalog's cache of table logs is bounded (issue 35: caches have a bound)."""

from __future__ import annotations

from pathlib import Path

from txsql.planner.catalog import MAX_CACHED_LOGS, Catalog
from txsql.planner.sql.refs import TableRef


def test_the_least_recently_used_logs_are_dropped_past_the_bound(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    refs = [TableRef(path=str(tmp_path / f"t{i}")) for i in range(MAX_CACHED_LOGS + 10)]
    first = catalog.log(refs[0])
    kept = catalog.log(refs[1])
    for ref in refs[2:]:
        catalog.log(ref)
        catalog.log(refs[1])  # used again and again: never the least recently used
    assert catalog.log(refs[1]) is kept
    assert catalog.log(refs[-1]) is catalog.log(refs[-1])
    assert catalog.log(refs[0]) is not first  # evicted: read again from storage


def test_a_dropped_table_s_log_is_forgotten(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    ref = TableRef(path=str(tmp_path / "t"))
    log = catalog.log(ref)
    catalog.forget(str(tmp_path / "t"))
    assert catalog.log(ref) is not log
