"""kill -9 a three-table group on moto's S3: all participants or none.

The object-store twin of ``test_coordinator_crashes``, on a reduced set of phases: after
staging 1 and 3 of 3 tables (with staged commit files), after ratification before any
publish (inline commits and staged files), mid-publish (t0 published, t1 and t2 not) and
during cleanup. The child (``tests.txn.multitable.s3_crash_writer``)
reaches a warehouse ``s3://<bucket>/wh`` on a moto server this module starts as its own
process (its requests go to a log file; it is stopped in teardown): deltalake's query
engine holds the GIL while it waits for a GET, so an in-process moto server would never
answer it. Ratifying is a put with ``If-None-Match``, which moto honours.

Oracles: deltalake reads every table straight from moto. This DuckDB has no httpfs
extension (and cannot fetch one offline), so it reads a byte-for-byte local mirror of the
bucket made with boto3 after each step.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.interop.readers import duckdb_rows
from tests.storage.moto_s3 import MotoS3Process
from tests.txn import processes
from tests.txn.multitable.multi_crash_writer import TABLES

# Phases after which the group is ratified, with the tables already published at the kill.
RATIFIED = {"mtx_ratified": 0, "mtx_published_1": 1, "mtx_cleanup": 3}
# (phase, commit form): staging phases write staged commit files; an inline group has
# nothing on the store before its record.
CASES = [
    ("mtx_staged_1", "staged"),
    ("mtx_staged_3", "staged"),
    ("mtx_ratified", "staged"),
    *((phase, "inline") for phase in RATIFIED),
]


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3Process]:
    server = MotoS3Process(tmp_path_factory.mktemp("moto") / "moto-s3.log")
    server.start()
    yield server
    server.stop()


def run_child(
    moto: MotoS3Process, warehouse: str, mode: str, crash_at: str | None = None, form: str = ""
) -> int:
    return processes.run_child(
        "tests.txn.multitable.s3_crash_writer",
        warehouse,
        mode,
        form,
        crash_at=crash_at,
        env=moto.env(),
    )


class Bucket:
    """What the outside readers see of ``s3://<name>/wh``."""

    def __init__(self, moto: MotoS3Process, name: str, mirror: Path) -> None:
        self.moto, self.name, self.mirror = moto, name, mirror

    def latest_version(self, table: str) -> int:
        prefix = f"wh/{table}/_delta_log/"
        names = [k[len(prefix) :] for k in self.moto.keys(self.name) if k.startswith(prefix)]
        return max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))

    def deltalake_rows(self, table: str, version: int) -> list[tuple[int, int]]:
        options = {**self.moto.env(), "AWS_ALLOW_HTTP": "true"}
        delta = DeltaTable(f"s3://{self.name}/wh/{table}", version=version, storage_options=options)
        result = QueryBuilder().register("t", delta).execute("SELECT id, amount FROM t").read_all()
        return sorted(zip(result.column(0).to_pylist(), result.column(1).to_pylist()))

    def duckdb_rows(self, table: str, version: int) -> list[tuple[int, int]]:
        client = self.moto.client()
        for key in self.moto.keys(self.name):
            if key.startswith(f"wh/{table}/"):
                local = self.mirror / key
                local.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(self.name, key, str(local))
        return duckdb_rows(str(self.mirror / "wh" / table), version, "id, amount")

    def ids_seen(self, table: str) -> dict[str, list[tuple[int, int]]]:
        version = self.latest_version(table)
        return {
            "duckdb": self.duckdb_rows(table, version),
            "deltalake": self.deltalake_rows(table, version),
        }


@pytest.mark.slow
@pytest.mark.parametrize(("phase", "form"), CASES)
def test_a_killed_group_on_s3_is_all_or_nothing(
    moto: MotoS3Process, tmp_path: Path, phase: str, form: str
) -> None:
    bucket = Bucket(moto, moto.new_bucket(), tmp_path / "mirror")
    warehouse = f"s3://{bucket.name}/wh"
    assert run_child(moto, warehouse, "create") == 0
    assert run_child(moto, warehouse, "transfer", crash_at=phase, form=form) == -signal.SIGKILL
    # Before any txsql access: readers see exactly the published tables.
    published = RATIFIED.get(phase, 0)
    for number, name in enumerate(TABLES):
        rows = bucket.ids_seen(name)
        has_group_row = [any(i == 1 for i, _ in r) for r in rows.values()]
        assert has_group_row == [number < published] * 2, (name, rows)
    # A txsql access in another process completes (or ignores) the group.
    assert run_child(moto, warehouse, "touch") == 0
    advanced = phase in RATIFIED
    total = 0
    for name in TABLES:
        rows = bucket.ids_seen(name)
        assert rows["duckdb"] == rows["deltalake"]
        assert any(i == 1 for i, _ in rows["duckdb"]) == advanced, (name, rows)
        total += sum(a for _, a in rows["duckdb"])
    assert total == 300  # the group's amounts sum to zero: whole or absent
    assert [bucket.latest_version(n) for n in TABLES[1:]] == [1 if advanced else 0] * 2
    assert bucket.latest_version("t0") == (2 if advanced else 1)
