"""A child process for the cross-table write skew test (txsql's COMMIT path, no Spark).

``python -m tests.txn.commit.write_skew_worker WAREHOUSE create``: enrolled tables ``a`` and ``b``
(one column ``role``), empty.
``... WAREHOUSE run ROLE ROUNDS ISOLATION BARRIERS``: ROLE 0 reads ``a`` and appends to
``b``, ROLE 1 reads ``b`` and appends to ``a`` (the classic write skew), one BEGIN ...
COMMIT per round through the planner's transaction control, the statement a notebook's
COMMIT runs. Both roles start each round together, and each waits for the other right
before its first put of the coordinator record (``Coordinator.ratify``), after every
check that runs before the commit: both commits are released to ratify at the same
moment. Each round prints one JSON line: committed or the conflict's message.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.txn.multitable.transfer_writer import write_rows
from txsql.errors import CommitConflictError
from txsql.log import features, protocol_upgrade
from txsql.log.actions import Metadata, Protocol
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE
from txsql.planner.catalog import Catalog
from txsql.planner.context import DmlHooks, RunContext
from txsql.planner.sql.statements import Begin, Commit
from txsql.planner.transaction_control import transaction_control
from txsql.txn.multitable.coordinator import Coordinator
from txsql.txn.transaction import Transaction

COLUMNS = ("role", "round")
HANG_GUARD_S = 120  # a partner that died must not hang the test forever


def _schema() -> str:
    fields = [{"name": c, "type": "long", "nullable": False, "metadata": {}} for c in COLUMNS]
    return json.dumps({"type": "struct", "fields": fields})


def create(warehouse: str) -> None:
    for name in ("a", "b"):
        log = DeltaLog.for_path(f"{warehouse}/{name}")
        metadata = Metadata(
            id=f"id-{name}",
            schema_string=_schema(),
            configuration={features.MULTI_TABLE_PROPERTY: "true"},
        )
        with Transaction(log) as txn:
            txn.stage([protocol_upgrade.upgrade_for_metadata(Protocol(1, 2), metadata), metadata])
            txn.commit("CREATE TABLE")


class Barrier:
    """Two processes meet at a named point: each creates its file, then waits for both."""

    def __init__(self, directory: str, role: int) -> None:
        self.directory = Path(directory)
        self.role = role

    def arrive(self, name: str) -> None:
        (self.directory / f"{name}.{self.role}").touch()

    def wait(self, name: str) -> None:
        self.arrive(name)
        other = self.directory / f"{name}.{1 - self.role}"
        deadline = time.monotonic() + HANG_GUARD_S
        while not other.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"partner never reached {name}")
            time.sleep(0.002)


def _no_spark_hooks() -> DmlHooks:
    return DmlHooks(
        # No row-level check without Spark. DmlHooks types the hook's result as a checker,
        # though txsql stores it in Transaction.row_predicate_checker, which may be None.
        row_checker=lambda spark, txn: None,  # type: ignore[arg-type, return-value]
        statement_start=lambda txn: None,
        record_changes=lambda ctx, txn, start: None,
    )


def one_round(warehouse: str, role: int, round_: int, isolation: str) -> dict[str, Any]:
    read_name, write_name = ("a", "b") if role == 0 else ("b", "a")
    ctx = RunContext(spark=None, catalog=Catalog(warehouse), hooks=_no_spark_hooks())  # type: ignore[arg-type]
    transaction_control(ctx, Begin(isolation), "BEGIN")
    reader = ctx.read_transaction(DeltaLog.for_path(f"{warehouse}/{read_name}"))
    assert reader is not None
    snapshot = reader.snapshot()
    assert snapshot is not None
    reader.record_scan(TRUE, snapshot.files)  # SELECT count(*) FROM <read table>
    writer = ctx.transaction(DeltaLog.for_path(f"{warehouse}/{write_name}"))
    writer.stage([write_rows(writer.table_root, COLUMNS, [(role, round_)])])
    ctx.commit(writer, "WRITE")
    try:
        done = transaction_control(ctx, Commit(), "COMMIT")
    except CommitConflictError as error:
        return {"round": round_, "role": role, "committed": False, "error": error.message}
    return {"round": round_, "role": role, "committed": True, "version": done.version}


def run(warehouse: str, role: int, rounds: int, isolation: str, barriers: str) -> None:
    barrier = Barrier(barriers, role)
    current = {"round": -1, "released": -1}
    ratify = Coordinator.ratify

    def ratify_together(self: Coordinator, record: Any) -> bool:
        if current["released"] != current["round"]:
            current["released"] = current["round"]
            barrier.wait(f"ratify-{current['round']}")
        return ratify(self, record)

    Coordinator.ratify = ratify_together  # type: ignore[method-assign]
    for round_ in range(rounds):
        current["round"] = round_
        barrier.wait(f"start-{round_}")
        try:
            outcome = one_round(warehouse, role, round_, isolation)
        finally:
            if current["released"] != round_:  # never got to ratify: do not block the other
                barrier.arrive(f"ratify-{round_}")
        print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    if sys.argv[2] == "create":
        create(sys.argv[1])
    else:
        run(sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6])
