"""Racing CREATE TABLE / CTAS / IF NOT EXISTS / LOCATION: exactly one CREATE of a name wins.

Deterministic races: one session's CREATE is held just before its version-0 commit (a
gate on ``Transaction.commit`` in that thread) while another session's CREATE of the same
table runs to the end; then the held one is released and must lose. One real race of two
OS processes (each with its own Spark) checks the same across processes.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import NonEmptyLocationError, TableExistsError
from txsql.log.deltalog import DeltaLog
from txsql.planner.catalog_entries import REGISTRY, REGISTRY_DIR
from txsql.txn.transaction import Transaction

pytestmark = [pytest.mark.spark]

HELD = "held-create"


@pytest.fixture()
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def sessions(spark: Any, warehouse: str) -> tuple[txsql.Session, txsql.Session]:
    return txsql.Session(spark, warehouse=warehouse), txsql.Session(spark, warehouse=warehouse)


@pytest.fixture()
def hold(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[Callable[[], Any], Callable[[], Any]], Any]]:
    """``hold(first, second)``: run ``first`` up to its commit, all of ``second``, then the rest.

    Returns first's result or the exception it raised.
    """
    real_commit = Transaction.commit
    gate = {"reached": threading.Event(), "release": threading.Event()}

    def gated(self: Transaction, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == HELD:
            gate["reached"].set()
            assert gate["release"].wait(120), "the held CREATE was never released"
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", gated)

    def run(first: Callable[[], Any], second: Callable[[], Any]) -> Any:
        outcome: list[Any] = []
        gate["reached"], gate["release"] = threading.Event(), threading.Event()

        def target() -> None:
            try:
                outcome.append(first())
            except Exception as exc:  # handed to the test, which asserts its type
                outcome.append(exc)

        thread = threading.Thread(target=target, name=HELD)
        thread.start()
        try:
            assert gate["reached"].wait(120), "the held CREATE never reached its commit"
            second()
        finally:
            gate["release"].set()
            thread.join(120)
        assert len(outcome) == 1
        return outcome[0]

    yield run


def parquet_files(root: str) -> set[str]:
    found: set[str] = set()
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith("_")]
        found.update(os.path.join(directory, n) for n in names if n.endswith(".parquet"))
    return found


def test_racing_ctas_one_wins_and_the_losers_files_are_never_committed(
    spark: Any, warehouse: str, hold: Any
) -> None:
    a, b = sessions(spark, warehouse)
    loser = hold(
        lambda: a.sql("CREATE TABLE c AS SELECT id FROM range(5)"),
        lambda: b.sql("CREATE TABLE c AS SELECT id * 10 AS id FROM range(3)"),
    )
    assert isinstance(loser, TableExistsError)
    log = DeltaLog.for_path(os.path.join(warehouse, "c"))
    assert log.store.list_commits() == [0]
    expected = [(0,), (10,), (20,)]
    assert duckdb_rows(log.table_root, 0, "id") == expected
    assert sorted(tuple(r) for r in a.sql("SELECT id FROM c").df.collect()) == expected
    committed = {
        os.path.normpath(os.path.join(log.table_root, f.path)) for f in log.snapshot().files
    }
    assert parquet_files(log.table_root) == committed  # the loser's files were deleted

    # IF NOT EXISTS loses quietly; the plain CREATE of another schema loses loudly.
    quiet = hold(
        lambda: a.sql("CREATE TABLE IF NOT EXISTS d AS SELECT 'x' AS s"),
        lambda: b.sql("CREATE TABLE IF NOT EXISTS d AS SELECT 'y' AS s"),
    )
    assert isinstance(quiet, txsql.Result) and "already exists" in (quiet.message or "")
    d = DeltaLog.for_path(os.path.join(warehouse, "d"))
    assert d.store.list_commits() == [0]
    assert duckdb_rows(d.table_root, 0, "s") == [("y",)]
    loud = hold(
        lambda: a.sql("CREATE TABLE e (id BIGINT)"),
        lambda: b.sql("CREATE TABLE e (name STRING, n INT)"),
    )
    assert isinstance(loud, TableExistsError)
    e = DeltaLog.for_path(os.path.join(warehouse, "e"))
    assert e.store.list_commits() == [0]
    assert [f["name"] for f in e.snapshot().schema_json["fields"]] == ["name", "n"]


def test_racing_create_location_cannot_repoint_the_name(
    spark: Any, warehouse: str, tmp_path: Path, hold: Any
) -> None:
    a, b = sessions(spark, warehouse)
    first, second = str(tmp_path / "loc1"), str(tmp_path / "loc2")

    def second_loses() -> None:
        with pytest.raises(TableExistsError, match="loc1"):
            b.sql(f"CREATE TABLE c (id INT) LOCATION '{second}'")

    won = hold(lambda: a.sql(f"CREATE TABLE c (id INT) LOCATION '{first}'"), second_loses)
    assert isinstance(won, txsql.Result) and won.version == 0
    assert not os.path.exists(second)  # the loser wrote nothing
    b.sql("INSERT INTO c VALUES (7)")  # b's INSERT lands in the table that won
    assert duckdb_rows(first, 1, "id") == [(7,)]
    with pytest.raises(TableExistsError, match="loc1"):
        b.sql(f"CREATE TABLE c (id INT) LOCATION '{second}'")
    quiet = b.sql(f"CREATE TABLE IF NOT EXISTS c (id INT) LOCATION '{second}'")
    assert "already exists" in (quiet.message or "")
    assert not os.path.exists(second)


def test_concurrent_creates_of_different_names_keep_every_registration(
    spark: Any, warehouse: str, tmp_path: Path
) -> None:
    # An old warehouse's single-file registry is still honoured.
    old = str(tmp_path / "old_table")
    txsql.Session(spark, warehouse=str(tmp_path / "elsewhere")).sql(
        f"CREATE TABLE o (id INT) LOCATION '{old}'"
    )
    os.makedirs(warehouse, exist_ok=True)
    Path(warehouse, REGISTRY).write_text(json.dumps({"legacy": old}))
    names = [f"t{i}" for i in range(4)]
    errors: list[BaseException] = []

    def create(name: str) -> None:
        try:
            s = txsql.Session(spark, warehouse=warehouse)
            s.sql(f"CREATE TABLE {name} (id INT) LOCATION '{tmp_path / ('ext_' + name)}'")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    s = txsql.Session(spark, warehouse=warehouse)
    assert set(names) | {"legacy"} <= set(s.catalog.names())
    for name in names:
        entry = json.loads(Path(warehouse, REGISTRY_DIR, f"{name}.json").read_text())
        assert entry["location"] == str(tmp_path / f"ext_{name}")
    s.sql("INSERT INTO legacy VALUES (1)")
    assert duckdb_rows(old, 1, "id") == [(1,)]
    with pytest.raises(TableExistsError):
        s.sql(f"CREATE TABLE legacy (id INT) LOCATION '{tmp_path / 'other'}'")


def test_non_empty_location_is_refused(spark: Any, warehouse: str, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=warehouse)
    data = str(tmp_path / "parquet_data")
    spark.range(3).write.parquet(data)
    before = sorted(os.listdir(data))
    with pytest.raises(NonEmptyLocationError, match="parquet_data") as info:
        s.sql(f"CREATE TABLE p (id BIGINT) LOCATION '{data}'")
    assert "part-" in info.value.message
    with pytest.raises(NonEmptyLocationError):
        s.sql(f"CREATE TABLE p LOCATION '{data}' AS SELECT 1 AS id")
    assert sorted(os.listdir(data)) == before  # nothing created, nothing deleted
    assert "p" not in s.catalog.names()
    # The default location counts too.
    os.makedirs(os.path.join(warehouse, "q"))
    Path(warehouse, "q", "notes.txt").write_text("mine")
    with pytest.raises(NonEmptyLocationError, match=r"notes\.txt"):
        s.sql("CREATE TABLE q (id INT)")


# --- two real processes --------------------------------------------------------------------


def _child(warehouse: str, proc: int, out: str, start: Any) -> None:
    os.environ.setdefault("TXSQL_DRIVER_MEMORY", "768m")
    import txsql
    from txsql.engine.spark import local_session
    from txsql.errors import TableExistsError

    spark = local_session("local[1]", f"txsql-create-race-{proc}")
    s = txsql.Session(spark=spark, warehouse=warehouse)
    spark.range(1).collect()  # warm the JVM before the race
    statements = [
        f"CREATE TABLE c AS SELECT id + {proc * 100} AS id FROM range(3)",
        f"CREATE TABLE IF NOT EXISTS d AS SELECT {proc} AS p",
        f"CREATE TABLE l (p INT) LOCATION '{os.path.join(os.path.dirname(warehouse), f'l{proc}')}'",
        f"CREATE TABLE n{proc} (p INT)",
    ]
    outcomes = []
    start.wait()
    for sql in statements:
        try:
            r = s.sql(sql)
            outcomes.append(["ok", r.version])
        except TableExistsError as exc:  # includes TableCreatedConcurrentlyError
            outcomes.append(["TableExistsError", str(exc)])
        except Exception as exc:
            outcomes.append([type(exc).__name__, str(exc)])
    Path(out).write_text(json.dumps(outcomes))
    spark.stop()


@pytest.mark.slow
@pytest.mark.usefixtures("spawnable_main")
def test_two_processes_race_creates(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    outs = [str(tmp_path / f"out{p}.json") for p in (1, 2)]
    procs = [ctx.Process(target=_child, args=(warehouse, p, outs[p - 1], start)) for p in (1, 2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0
    results = [json.loads(Path(o).read_text()) for o in outs]
    c_outcomes = sorted(r[0][0] for r in results)
    assert c_outcomes == ["TableExistsError", "ok"], results
    winner = 1 if results[0][0][0] == "ok" else 2
    c = os.path.join(warehouse, "c")
    assert DeltaLog.for_path(c).store.list_commits() == [0]
    assert duckdb_rows(c, 0, "id") == [(winner * 100 + i,) for i in range(3)]
    # IF NOT EXISTS: both succeed, one created the table with its single row.
    assert [r[1][0] for r in results] == ["ok", "ok"], results
    d = os.path.join(warehouse, "d")
    assert DeltaLog.for_path(d).store.list_commits() == [0]
    assert len(duckdb_rows(d, 0, "p")) == 1
    # LOCATION to two directories: exactly one registration wins.
    assert sorted(r[2][0] for r in results) == ["TableExistsError", "ok"], results
    loc_winner = 1 if results[0][2][0] == "ok" else 2
    entry = json.loads(Path(warehouse, REGISTRY_DIR, "l.json").read_text())
    assert entry["location"] == str(tmp_path / f"l{loc_winner}")
    assert not DeltaLog.for_path(str(tmp_path / f"l{3 - loc_winner}")).exists()
    # Different names: both registered.
    assert [r[3][0] for r in results] == ["ok", "ok"]
    s_names = set(os.listdir(os.path.join(warehouse, REGISTRY_DIR)))
    assert {"c.json", "d.json", "l.json", "n1.json", "n2.json"} <= s_names


def test_failed_ctas_leaves_no_table_directory_or_registration(
    spark: Any, warehouse: str, tmp_path: Path
) -> None:
    s = txsql.Session(spark, warehouse=warehouse)
    location = tmp_path / "never"
    failing = "AS SELECT CASE WHEN id > 0 THEN raise_error('boom') ELSE id END AS x FROM range(2)"
    with pytest.raises(Exception, match="boom"):
        s.sql(f"CREATE TABLE f LOCATION '{location}' {failing}")
    assert not location.exists()
    assert not Path(warehouse, REGISTRY_DIR, "f.json").exists()
    s.sql(f"CREATE TABLE f LOCATION '{location}' AS SELECT 1 AS x")  # the name is free
    assert duckdb_rows(str(location), 0, "x") == [(1,)]
