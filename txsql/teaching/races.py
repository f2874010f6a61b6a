"""One cell of the write-conflict matrix: two writes raced from one snapshot, on a copy.

Every race runs on a fresh copy of a small base table ``(id INT, p INT, v INT)``:

* file A holds ids 1 and 2 (``p = 1``) and a deletion vector (id 9 was deleted), so
  REORG ... APPLY (PURGE) has something to purge;
* file B holds ids 3 and 4 (``p = 2``).

The ``unpartitioned`` layout keeps A and B side by side (deletion vectors on, so txsql and
Databricks check rows, not files); ``partitioned`` puts them in partitions ``p=1`` and
``p=2``. Building a base costs a few statements, so each layout is built once per
matrix and its directory (a few KB) copied for every race.

A race: ours begins and runs its statement, theirs commits, then ours commits. Ours is the
row of the matrix, theirs the column; running every pair as both row and column gives both
orders. Theirs always starts from the base table and does not depend on ours (ours has
staged, not committed), so each of theirs' statements runs once per layout, on a copy of the
base, and its commit (new data and deletion-vector files, then its log entry) is copied into
each race's table while ours is open, as another writer's process would add them. Ours'
commit then finds that version taken and goes through txsql's conflict check as in any race.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq

from txsql.dv.store import read_deletion_vector
from txsql.errors import CommitConflictError, ScenarioError
from txsql.log.deltalog import DeltaLog
from txsql.session import Session

Row = tuple[Any, ...]

BASE_ROWS: tuple[Row, ...] = ((1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 2, 40))
LAYOUTS = {
    "unpartitioned": "",
    "partitioned": " PARTITIONED BY (p)",
    # Delta OSS's file-level rules, live: txsql's own checker with row-level checks off.
    "file-level": " TBLPROPERTIES ('txsql.rowLevelConcurrency' = 'false')",
}
# What kind of write a statement is decides Databricks' and Delta OSS's documented rules.
KINDS = ("INSERT", "UPDATE", "DELETE", "MERGE", "OPTIMIZE", "ZORDER", "REORG")
COMPACTIONS = frozenset({"OPTIMIZE", "ZORDER", "REORG"})  # rewrite files, change no rows
COMMITTED = "✔"


@dataclass(frozen=True)
class Statement:
    """A matrix row/column: its kind and SQL with ``{t}`` (table), ``{k}`` (the side's
    key: an id), ``{p}`` (that key's partition) and ``{new}`` (an id no row has)."""

    kind: str
    sql: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ScenarioError(
                f"unknown statement kind {self.kind!r}: the documented rules know {KINDS}"
            )

    def text(self, table: str, key: int, new_id: int) -> str:
        return self.sql.format(t=table, k=key, p=partition_of(key), new=new_id)


STATEMENTS: Mapping[str, Statement] = {
    "INSERT": Statement("INSERT", "INSERT INTO {t} VALUES ({new}, {p}, 0)"),
    "UPDATE": Statement("UPDATE", "UPDATE {t} SET v = v + 1 WHERE p = {p} AND id = {k}"),
    "DELETE": Statement("DELETE", "DELETE FROM {t} WHERE p = {p} AND id = {k}"),
    "MERGE": Statement(
        "MERGE",
        "MERGE INTO {t} AS t USING (SELECT {k} AS id, {p} AS p, 5 AS v) AS s "
        "ON t.p = {p} AND t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + s.v "
        "WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, s.p, s.v)",
    ),
    "OPTIMIZE": Statement("OPTIMIZE", "OPTIMIZE {t}"),
    "ZORDER": Statement("ZORDER", "OPTIMIZE {t} ZORDER BY (v)"),
    "REORG": Statement("REORG", "REORG TABLE {t} APPLY (PURGE)"),
}
OUR_NEW_ID, THEIR_NEW_ID = 100, 200


def partition_of(key: int) -> int:
    return 1 if key <= 2 else 2


@dataclass(frozen=True)
class Setting:
    """Where the two statements meet: the layout, each side's key, the isolation level."""

    name: str
    layout: str
    our_key: int
    their_key: int
    level: str = "WriteSerializable"

    @property
    def same_row(self) -> bool:
        return self.our_key == self.their_key

    @property
    def same_partition(self) -> bool:
        return partition_of(self.our_key) == partition_of(self.their_key)

    def at(self, level: str) -> Setting:
        return Setting(self.name, self.layout, self.our_key, self.their_key, level)


SETTINGS = (
    Setting("one file, same row", "unpartitioned", 1, 1),
    Setting("one file, different rows", "unpartitioned", 1, 2),
    Setting("partitioned, same partition", "partitioned", 1, 2),
    Setting("partitioned, different partitions", "partitioned", 1, 3),
)


@dataclass(frozen=True)
class RaceResult:
    """txsql's outcome (``✔`` or the conflict class) and whether the rows are serial."""

    outcome: str
    rows: tuple[Row, ...]
    serial: bool


def outcome_name(error: CommitConflictError) -> str:
    """``ConcurrentAppendError`` -> ``ConcurrentAppend``."""
    return type(error).__name__.removesuffix("Error")


SerialRows = Callable[[Sequence[str]], list[Row]]


def duckdb_serial_rows() -> SerialRows | None:
    """The oracle: DuckDB runs a serial order on the base rows in memory (no txsql code).

    None when DuckDB is not installed; the races then replay serial orders with txsql.
    """
    try:
        import duckdb
    except ImportError:
        return None

    def run(texts: Sequence[str]) -> list[Row]:
        con = duckdb.connect()
        try:
            con.execute("CREATE TABLE m (id INT, p INT, v INT)")
            con.executemany("INSERT INTO m VALUES (?, ?, ?)", [list(r) for r in BASE_ROWS])
            for text in texts:
                con.execute(text.replace("{t}", "m"))
            return sorted(tuple(r) for r in con.execute("SELECT id, p, v FROM m").fetchall())
        finally:
            con.close()

    return run


def table_rows(path: str) -> list[Row]:
    """The live ``(id, p, v)`` rows of a small table, read without Spark.

    A Spark scan per race would cost more than the race's own statements; the table is a
    few rows in a few parquet files, so its log, its deletion vectors and pyarrow suffice.
    """
    log = DeltaLog.for_path(path)
    rows = []
    for add in log.snapshot().files:
        data = pq.read_table(os.path.join(path, unquote(add.path))).to_pydict()
        count = len(next(iter(data.values()), []))
        deleted = (
            read_deletion_vector(add.deletion_vector, log.table_root, log.store.fs)
            if add.deletion_vector
            else ()
        )
        for i in range(count):
            if i in deleted:
                continue
            values = {name: column[i] for name, column in data.items()}
            partition = add.partition_values.get("p")
            if "p" not in values:
                values["p"] = None if partition is None else int(partition)
            rows.append((values["id"], values["p"], values["v"]))
    return sorted(rows)


def files_under(root: str) -> set[str]:
    """Every file below ``root``, as paths relative to it."""
    return {
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
    }


def log_entry_last(path: str) -> tuple[bool, str]:
    """Sort key: data and deletion-vector files first, the log last (as a writer commits)."""
    return (path.startswith("_delta_log"), path)


class RaceTrack:
    """Base tables built once per layout, copies per race, results cached per race text."""

    def __init__(self, spark: Any, serial_rows: SerialRows | None = None) -> None:
        self.root = tempfile.mkdtemp(prefix="txsql-matrix-")
        self.session = Session(spark=spark, warehouse=f"{self.root}/warehouse")
        self.bases: dict[str, str] = {}
        self.copies = 0
        self.cache: dict[tuple[str, str, str, str], RaceResult] = {}
        # (layout, their text) -> the table theirs committed on, and the files it added.
        self.commits: dict[tuple[str, str], tuple[str, list[str]]] = {}
        self.serial_rows = serial_rows or duckdb_serial_rows() or self.replayed_rows

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def base(self, layout: str) -> str:
        if layout not in self.bases:
            path = f"{self.root}/base-{layout}"
            t = f"delta.`{path}`"
            self.session.sql(f"CREATE TABLE {t} (id INT, p INT, v INT){LAYOUTS[layout]}")
            self.session.sql(f"INSERT INTO {t} VALUES (1, 1, 10), (2, 1, 20), (9, 1, 90)")
            self.session.sql(f"INSERT INTO {t} VALUES (3, 2, 30), (4, 2, 40)")
            self.session.sql(f"DELETE FROM {t} WHERE id = 9")
            self.bases[layout] = path
        return self.bases[layout]

    def copy(self, layout: str) -> str:
        self.copies += 1
        path = f"{self.root}/race-{self.copies}"
        shutil.copytree(self.base(layout), path)
        return f"delta.`{path}`"

    def rows(self, table: str) -> list[Row]:
        return table_rows(table[len("delta.`") : -1])

    def replayed_rows(self, texts: Sequence[str]) -> list[Row]:
        """A serial order replayed with txsql on a fresh copy (when DuckDB is missing)."""
        table = self.copy("unpartitioned")
        for text in texts:
            self.session.sql(text.replace("{t}", table))
        return self.rows(table)

    def their_commit(self, layout: str, text: str) -> tuple[str, list[str]]:
        """Theirs run once on a copy of the base: that copy and the files the commit added."""
        key = (layout, text)
        if key not in self.commits:
            table = self.copy(layout)
            path = table[len("delta.`") : -1]
            self.session.sql(text.replace("{t}", table))
            base = self.base(layout)
            before, after = files_under(base), files_under(path)
            changed = [
                name
                for name in before
                if name not in after or not filecmp.cmp(f"{base}/{name}", f"{path}/{name}", False)
            ]
            if changed:
                # Copying added files cannot replay a statement that rewrote or removed files.
                raise ScenarioError(
                    f"{text!r} changed or removed {sorted(changed)} of the base table; the "
                    "matrix replays their commit by its added files: race statements that "
                    "only add files (no VACUUM, no log cleanup)"
                )
            self.commits[key] = (path, sorted(after - before, key=log_entry_last))
        return self.commits[key]

    def race(self, setting: Setting, ours: Statement, theirs: Statement) -> RaceResult:
        our_text = ours.text("{t}", setting.our_key, OUR_NEW_ID)
        their_text = theirs.text("{t}", setting.their_key, THEIR_NEW_ID)
        key = (setting.layout, setting.level, our_text, their_text)
        if key not in self.cache:
            self.cache[key] = self._run(setting, our_text, their_text, ours.kind, theirs.kind)
        return self.cache[key]

    def _run(
        self, setting: Setting, ours: str, theirs: str, our_kind: str, their_kind: str
    ) -> RaceResult:
        failed = f"{setting.name}: {ours!r} racing {theirs!r} failed"
        try:
            committed_on, added = self.their_commit(setting.layout, theirs)
        except Exception as error:
            raise ScenarioError(failed) from error
        table = self.copy(setting.layout)
        path = table[len("delta.`") : -1]
        tx = self.session.begin(setting.level)
        try:
            tx.sql(ours.replace("{t}", table))
            # Theirs commits now: its files, then its log entry, land in ours' table.
            for name in added:
                os.makedirs(os.path.dirname(f"{path}/{name}"), exist_ok=True)
                shutil.copy2(f"{committed_on}/{name}", f"{path}/{name}")
        except Exception as error:
            tx.rollback()
            raise ScenarioError(failed) from error
        try:
            tx.commit()
            outcome = COMMITTED
        except CommitConflictError as error:
            outcome = outcome_name(error)
        rows = tuple(self.rows(table))
        shutil.rmtree(path, ignore_errors=True)
        # Compactions change no rows, so a serial order simply leaves them out.
        data = {ours: our_kind not in COMPACTIONS, theirs: their_kind not in COMPACTIONS}
        orders = [[theirs, ours], [ours, theirs]] if outcome == COMMITTED else [[theirs]]
        serial = any(
            list(rows) == self.serial_rows([text for text in order if data[text]])
            for order in orders
        )
        return RaceResult(outcome, rows, serial)
