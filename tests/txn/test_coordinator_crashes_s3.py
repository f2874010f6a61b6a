"""kill -9 a three-table group on moto's S3: all participants or none.

The object-store twin of ``test_coordinator_crashes``, on a reduced set of phases: after
staging 1 and 3 of 3 tables, after ratification before any publish, mid-publish (t0
published, t1 and t2 not) and during cleanup. The child (``tests.txn.s3_crash_writer``)
reaches a warehouse ``s3://<bucket>/wh`` on a moto server this module starts as its own
process (its requests go to a log file; it is stopped in teardown): deltalake's query
engine holds the GIL while it waits for a GET, so an in-process moto server would never
answer it. Ratifying is a put with ``If-None-Match``, which moto honours.

Oracles: deltalake reads every table straight from moto. This DuckDB has no httpfs
extension (and cannot fetch one offline), so it reads a byte-for-byte local mirror of the
bucket made with boto3 after each step.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.interop.readers import duckdb_rows
from tests.storage.moto_s3 import ACCESS_KEY, REGION, SECRET_KEY, free_port
from tests.txn.multi_crash_writer import TABLES

ROOT_DIR = Path(__file__).resolve().parents[2]
STAGED = ["mtx_staged_1", "mtx_staged_3"]
# Phases after which the group is ratified, with the tables already published at the kill.
RATIFIED = {"mtx_ratified": 0, "mtx_published_1": 1, "mtx_cleanup": 3}


class MotoProcess:
    """``python -m moto.server`` on a free port of 127.0.0.1, logging to ``log_file``."""

    def __init__(self, log_file: Path) -> None:
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self._log = log_file.open("w")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        while True:  # ready once it accepts a connection (or dead: fail, do not hang)
            assert self._process.poll() is None, log_file.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=0.1)  # a pause that notices a dead server

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)
        self._log.close()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        name = f"b-{os.urandom(6).hex()}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoProcess]:
    server = MotoProcess(tmp_path_factory.mktemp("moto") / "moto-s3.log")
    yield server
    server.stop()


def store_env(moto: MotoProcess) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": moto.endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
    }


def run_child(moto: MotoProcess, warehouse: str, mode: str, crash_at: str | None = None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "TXSQL_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")])
    env.update(store_env(moto))
    if crash_at:
        env["TXSQL_CRASH_AT"] = crash_at
    done = subprocess.run(
        [sys.executable, "-m", "tests.txn.s3_crash_writer", warehouse, mode],
        cwd=ROOT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr
    return done.returncode


class Bucket:
    """What the outside readers see of ``s3://<name>/wh``."""

    def __init__(self, moto: MotoProcess, name: str, mirror: Path) -> None:
        self.moto, self.name, self.mirror = moto, name, mirror

    def latest_version(self, table: str) -> int:
        prefix = f"wh/{table}/_delta_log/"
        names = [k[len(prefix) :] for k in self.moto.keys(self.name) if k.startswith(prefix)]
        return max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))

    def deltalake_rows(self, table: str, version: int) -> list[tuple[int, int]]:
        options = {**store_env(self.moto), "AWS_ALLOW_HTTP": "true"}
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
@pytest.mark.parametrize("phase", [*STAGED, *RATIFIED])
def test_a_killed_group_on_s3_is_all_or_nothing(
    moto: MotoProcess, tmp_path: Path, phase: str
) -> None:
    bucket = Bucket(moto, moto.new_bucket(), tmp_path / "mirror")
    warehouse = f"s3://{bucket.name}/wh"
    assert run_child(moto, warehouse, "create") == 0
    assert run_child(moto, warehouse, "transfer", crash_at=phase) == -signal.SIGKILL
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
