"""A tiny in-memory Delta table for deterministic interleaving tests (no Spark, no sleeps).

Data files are never read by the transaction layer, so they are empty placeholders (a
commit only checks that the files it adds exist): an ``AddFile`` with stats describing its
rows is enough. Deletion vectors are real DV files
written through ``txsql.dv`` into the same ``MemoryFileIO``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyroaring import BitMap64

from txsql.dv import read_deletion_vector, write_deletion_vectors
from txsql.log import protocol_upgrade
from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from txsql.log.deltalog import DeltaLog
from txsql.log.predicates import TRUE, Predicate
from txsql.storage import LogStore, MemoryFileIO
from txsql.txn.isolation import IsolationLevel
from txsql.txn.result import CommitResult
from txsql.txn.transaction import Transaction

ROOT = "/mem/t"
DV_PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
PLAIN_PROTOCOL = Protocol(1, 2)


def schema_json(columns: Sequence[tuple[str, str]]) -> str:
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns]
    return json.dumps({"type": "struct", "fields": fields})


class Lab:
    """One table plus helpers to build the actions of DML statements on it."""

    def __init__(
        self,
        partition_columns: Sequence[str] = (),
        *,
        columns: Sequence[tuple[str, str]] | None = None,
        dv: bool = True,
        isolation: str | None = None,
        row_level: bool | None = None,
        conf: Mapping[str, str] | None = None,
        protocol: Protocol | None = None,
    ) -> None:
        self.fs = MemoryFileIO()
        self.log = DeltaLog(LogStore(ROOT, self.fs))
        configuration = {"delta.enableDeletionVectors": "true"} if dv else {}
        if isolation:
            configuration["delta.isolationLevel"] = isolation
        if row_level is not None:
            configuration["txsql.rowLevelConcurrency"] = str(row_level).lower()
        configuration.update(conf or {})
        cols = columns or [("x", "integer"), ("id", "long"), ("v", "long")]
        self.metadata = Metadata(
            id="lab",
            schema_string=schema_json(cols),
            partition_columns=tuple(partition_columns),
            configuration=configuration,
        )
        self.protocol = protocol or (DV_PROTOCOL if dv else PLAIN_PROTOCOL)
        self.commit([self.protocol, self.metadata], "CREATE TABLE", blind=True)

    # --- files ---------------------------------------------------------------------------

    def file(
        self,
        name: str,
        ids: Iterable[int],
        partition: Mapping[str, str | None] | None = None,
        *,
        data_change: bool = True,
        stats: bool = True,
    ) -> AddFile:
        """A data file holding rows with the given ids (row index i holds ids[i], v = id)."""
        ids = list(ids)
        values = dict(partition or {})
        prefix = "/".join(f"{k}={v}" for k, v in values.items())
        path = f"{prefix}/{name}.parquet" if prefix else f"{name}.parquet"
        body = None
        if stats:
            body = json.dumps(
                {
                    "numRecords": len(ids),
                    "minValues": {"id": min(ids), "v": min(ids)} if ids else {},
                    "maxValues": {"id": max(ids), "v": max(ids)} if ids else {},
                    "nullCount": {"id": 0, "v": 0},
                }
            )
        # A placeholder: a commit checks that the files it adds exist, nothing reads them.
        if not self.fs.exists(f"{ROOT}/{path}"):
            self.fs.write(f"{ROOT}/{path}", b"")
        return AddFile(path, values, 100 + len(ids), 1, data_change=data_change, stats=body)

    def current(self, path: str) -> AddFile:
        """The live add of ``path`` in the latest snapshot."""
        return next(f for f in self.log.snapshot().files if f.path == path)

    def deleted_rows(self, add: AddFile) -> set[int]:
        if add.deletion_vector is None:
            return set()
        return set(read_deletion_vector(add.deletion_vector, ROOT, self.fs))

    def dv_delete(self, add: AddFile, rows: Iterable[int]) -> list[Action]:
        """What a merge-on-read DELETE of ``rows`` of ``add`` commits.

        ARCHITECTURE.md, "What a DML commits".
        """
        old = BitMap64(self.deleted_rows(add))
        merged = old | BitMap64(rows)
        remove = add.to_remove(timestamp=2)
        (dv,) = write_deletion_vectors(ROOT, self.fs, [merged])
        stats = json.loads(add.stats or "{}")
        stats["tightBounds"] = False
        return [remove, replace(add, deletion_vector=dv, stats=json.dumps(stats))]

    @staticmethod
    def remove(add: AddFile, *, data_change: bool = True) -> RemoveFile:
        return RemoveFile(
            add.path,
            deletion_timestamp=2,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=add.partition_values,
            size=add.size,
            stats=add.stats,
            deletion_vector=add.deletion_vector,
        )

    # --- transactions --------------------------------------------------------------------

    def txn(self, isolation: IsolationLevel | None = None, **kwargs: Any) -> Transaction:
        t = Transaction(self.log, isolation=isolation, **kwargs)
        t.snapshot()
        return t

    def commit(
        self,
        actions: Sequence[Action],
        operation: str = "WRITE",
        *,
        blind: bool = False,
        read: Predicate = TRUE,
        read_files: Sequence[AddFile] = (),
    ) -> CommitResult:
        """Commit ``actions`` right away (a winner); non-blind winners record a read."""
        t = Transaction(self.log)
        t.snapshot()
        if not blind:
            t.record_scan(read, read_files)
        t.stage(actions)
        return t.commit(operation)

    def with_features(self, *writer: str) -> Protocol:
        return protocol_upgrade.with_features(self.protocol, writer=writer)
