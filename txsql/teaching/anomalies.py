"""Isolation anomalies, live: Hermitage's interleavings (https://github.com/ept/hermitage)
replayed on txsql, for notebooks and classes.

Each scenario runs on a fresh two-row table ``test (id, value)`` holding (1, 10) and
(2, 20), with two or three explicit transactions (``Session.begin(level)``) in Hermitage's
step order, and answers one question: was the anomaly observed? txsql never blocks: where
a locking database makes a statement wait, txsql lets it run on its snapshot and decides
at COMMIT, so a prevented anomaly shows up as a conflict at COMMIT (or as a read that
simply does not see the other transaction).

``anomaly_table(spark)`` runs them all at both levels and renders the table a teacher
shows: the interleaving, txsql's outcome at WriteSerializable and at Serializable, and
PostgreSQL's at SERIALIZABLE for comparison (from Hermitage's published results).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from txsql.errors import CommitConflictError, ScenarioError
from txsql.magics.render import Column, html_table, text_table
from txsql.session import Session, TransactionHandle

LEVELS = ("WriteSerializable", "Serializable")


def _expect(ok: bool, step: str) -> None:
    if not ok:
        raise ScenarioError(f"the interleaving broke: {step}")


def read_values(tx: TransactionHandle, where: str = "TRUE") -> dict[int, int]:
    rows = tx.sql(f"SELECT id, value FROM test WHERE {where}").collect()
    return {r.id: r.value for r in rows}


def try_commit(tx: TransactionHandle) -> bool:
    """COMMIT; False when txsql aborts it with a conflict (Hermitage's "rollback")."""
    try:
        tx.commit()
    except CommitConflictError:
        return False
    return True


def values_of(s: Session) -> dict[int, int]:
    return {r.id: r.value for r in s.sql("SELECT id, value FROM test").collect()}


# --- the scenarios: each returns True when the anomaly was observed -------------------


def g0(s: Session, level: str) -> bool:
    """Write cycles: two transactions' writes to two rows interleave."""
    t1, t2 = s.begin(level), s.begin(level)
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    t2.sql("UPDATE test SET value = 12 WHERE id = 1")
    t1.sql("UPDATE test SET value = 21 WHERE id = 2")
    _expect(try_commit(t1), "T1 commits first")
    t2.sql("UPDATE test SET value = 22 WHERE id = 2")
    _expect(not try_commit(t2), "T2, the second writer of row 1, aborts")
    return values_of(s) not in ({1: 11, 2: 21}, {1: 12, 2: 22})


def g1a(s: Session, level: str) -> bool:
    """Aborted reads: a transaction reads a write that is later rolled back."""
    t1, t2 = s.begin(level), s.begin(level)
    t1.sql("UPDATE test SET value = 101 WHERE id = 1")
    first = read_values(t2)
    t1.rollback()
    second = read_values(t2)
    t2.commit()
    return 101 in first.values() or 101 in second.values()


def g1b(s: Session, level: str) -> bool:
    """Intermediate reads: a transaction reads a value another later overwrote itself."""
    t1, t2 = s.begin(level), s.begin(level)
    t1.sql("UPDATE test SET value = 101 WHERE id = 1")
    first = read_values(t2)
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    _expect(try_commit(t1), "T1 commits")
    second = read_values(t2)
    t2.commit()
    return 101 in first.values() or 101 in second.values()


def g1c(s: Session, level: str) -> bool:
    """Circular information flow: each transaction reads the other's uncommitted write."""
    t1, t2 = s.begin(level), s.begin(level)
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    t2.sql("UPDATE test SET value = 22 WHERE id = 2")
    t1_sees = read_values(t1, "id = 2")
    t2_sees = read_values(t2, "id = 1")
    try_commit(t1)
    try_commit(t2)
    return t1_sees != {2: 20} or t2_sees != {1: 10}


def otv(s: Session, level: str) -> bool:
    """Observed transaction vanishes: a reader sees part of a transaction, then loses it."""
    t1, t2, t3 = s.begin(level), s.begin(level), s.begin(level)
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    t1.sql("UPDATE test SET value = 19 WHERE id = 2")
    t2.sql("UPDATE test SET value = 12 WHERE id = 1")
    _expect(try_commit(t1), "T1 commits")
    seen = [read_values(t3, "id = 1")]
    t2.sql("UPDATE test SET value = 18 WHERE id = 2")
    seen.append(read_values(t3, "id = 2"))
    _expect(not try_commit(t2), "T2 aborts: T1 changed row 1 after T2's snapshot")
    seen.append(read_values(t3))
    t3.commit()
    return seen != [{1: 11}, {2: 19}, {1: 11, 2: 19}]


def pmp(s: Session, level: str) -> bool:
    """Predicate-many-preceders: a predicate read, then a concurrent insert matching it."""
    t1, t2 = s.begin(level), s.begin(level)
    first = read_values(t1, "value = 30")
    t2.sql("INSERT INTO test VALUES (3, 30)")
    _expect(try_commit(t2), "T2's insert commits")
    second = read_values(t1, "value % 3 = 0")
    t1.commit()
    return first != {} or second != {}


def p4(s: Session, level: str) -> bool:
    """Lost update: two read-modify-write transactions on one row both commit."""
    t1, t2 = s.begin(level), s.begin(level)
    read_values(t1, "id = 1")
    read_values(t2, "id = 1")
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    t2.sql("UPDATE test SET value = 11 WHERE id = 1")
    _expect(try_commit(t1), "T1 commits first")
    return try_commit(t2)


def g_single(s: Session, level: str) -> bool:
    """Read skew: a transaction sees one row before and another after a concurrent commit."""
    t1, t2 = s.begin(level), s.begin(level)
    first = read_values(t1, "id = 1")
    read_values(t2)
    t2.sql("UPDATE test SET value = 12 WHERE id = 1")
    t2.sql("UPDATE test SET value = 18 WHERE id = 2")
    _expect(try_commit(t2), "T2 commits")
    second = read_values(t1, "id = 2")
    t1.commit()
    return first != {1: 10} or second != {2: 20}


def g2_item(s: Session, level: str) -> bool:
    """Write skew: both read both rows, each updates a different one, both commit."""
    t1, t2 = s.begin(level), s.begin(level)
    read_values(t1, "id IN (1, 2)")
    read_values(t2, "id IN (1, 2)")
    t1.sql("UPDATE test SET value = 11 WHERE id = 1")
    t2.sql("UPDATE test SET value = 21 WHERE id = 2")
    _expect(try_commit(t1), "T1 commits first")
    return try_commit(t2)


def g2(s: Session, level: str) -> bool:
    """Anti-dependency cycle over a predicate: both check `value % 3 = 0`, both insert."""
    t1, t2 = s.begin(level), s.begin(level)
    _expect(read_values(t1, "value % 3 = 0") == {}, "T1 finds no row")
    _expect(read_values(t2, "value % 3 = 0") == {}, "T2 finds no row")
    t1.sql("INSERT INTO test VALUES (3, 30)")
    t2.sql("INSERT INTO test VALUES (4, 42)")
    _expect(try_commit(t1), "T1 commits first")
    return try_commit(t2)


@dataclass(frozen=True)
class Anomaly:
    """One row of the table: the scenario and what PostgreSQL SERIALIZABLE does."""

    name: str
    interleaving: str
    run: Callable[[Session, str], bool]
    postgres_serializable: str = "prevented"


ANOMALIES = (
    Anomaly("G0", "T1, T2 update row 1; T1 updates row 2, commits; T2 updates row 2", g0),
    Anomaly("G1a", "T1 updates row 1; T2 reads; T1 rolls back; T2 reads", g1a),
    Anomaly("G1b", "T1 writes 101 then 11 to row 1; T2 reads before and after", g1b),
    Anomaly("G1c", "T1 updates row 1, T2 row 2; each reads the other's row", g1c),
    Anomaly("OTV", "T1 updates rows 1, 2, commits; T2 updates them; T3 reads between", otv),
    Anomaly("PMP", "T1 reads value = 30; T2 inserts (3, 30), commits; T1 reads again", pmp),
    Anomaly("P4", "T1, T2 read row 1; both update it; T1 commits first", p4),
    Anomaly("G-single", "T1 reads row 1; T2 updates rows 1, 2, commits; T1 reads row 2", g_single),
    Anomaly("G2-item", "T1, T2 read rows 1, 2; T1 updates row 1, T2 row 2", g2_item),
    Anomaly("G2", "T1, T2 find no value % 3 = 0; each inserts one; T1 commits first", g2),
)


def run_anomaly(spark: Any, anomaly: Anomaly, level: str) -> bool:
    """Run one scenario on a fresh table in a temporary warehouse; True if observed."""
    with tempfile.TemporaryDirectory(prefix="txsql-hermitage-") as warehouse:
        s = Session(spark=spark, warehouse=warehouse)
        s.sql("CREATE TABLE test (id INT, value INT)")
        s.sql("INSERT INTO test VALUES (1, 10), (2, 20)")
        return anomaly.run(s, level)


class AnomalyTable:
    """Outcomes per anomaly and level, rendered as a table (HTML in a notebook)."""

    COLUMNS = (
        Column("anomaly", "string"),
        Column("interleaving", "string"),
        Column("WriteSerializable", "txsql"),
        Column("Serializable", "txsql"),
        Column("PostgreSQL SERIALIZABLE", "Hermitage"),
    )

    def __init__(self, observed: dict[tuple[str, str], bool]) -> None:
        self.observed = observed

    def rows(self) -> list[tuple[str, ...]]:
        def word(name: str, level: str) -> str:
            return "observed" if self.observed[(name, level)] else "prevented"

        return [
            (a.name, a.interleaving, *(word(a.name, lv) for lv in LEVELS), a.postgres_serializable)
            for a in ANOMALIES
            if (a.name, LEVELS[0]) in self.observed
        ]

    def _repr_html_(self) -> str:
        return html_table(self.COLUMNS, self.rows())

    def __repr__(self) -> str:
        return text_table(self.COLUMNS, self.rows())


def anomaly_table(spark: Any, names: tuple[str, ...] | None = None) -> AnomalyTable:
    """Run every anomaly (or those named) at both levels."""
    chosen = [a for a in ANOMALIES if names is None or a.name in names]
    return AnomalyTable(
        {(a.name, level): run_anomaly(spark, a, level) for a in chosen for level in LEVELS}
    )


__all__ = [
    "ANOMALIES",
    "LEVELS",
    "Anomaly",
    "AnomalyTable",
    "ScenarioError",
    "anomaly_table",
    "read_values",
    "run_anomaly",
    "try_commit",
    "values_of",
]
