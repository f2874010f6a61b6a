"""The one way a commit's staged file actions are rewritten onto a winner: a rebase.

Three kinds of rebase exist, and each only says *which* rows each file's new deletion
vector must delete (:meth:`RebaseKind.restaging`):

* :class:`Rebase`: the winner gave a new DV to a file we also changed, on other rows:
  ``remove(F, W)`` + ``add(F, W | ours)`` (:mod:`txsql.txn.rowlevel.state`);
* :class:`DmlTranslation`: our DML lost to a compaction, so our deletions move onto the
  compaction's outputs (:mod:`txsql.txn.rowlevel.compaction_races`);
* :class:`Carry`: our compaction lost to a DML, so the DML's new deletions go onto our
  outputs as DVs.

:func:`rebase` then does the steps they share: drop or replace the staged removes and adds,
drop an add whose DV would delete every row of its file, write all new DVs into one DV file,
mark the adds' stats ``tightBounds: false`` and remember each written bitmap so that a later
winner need not read it back. Data files are never rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from pyroaring import BitMap64

from txsql.dv.store import write_deletion_vectors
from txsql.log import stats_json
from txsql.log.actions import AddFile, RemoveFile
from txsql.txn.readset import ReadSet
from txsql.txn.rowlevel.state import RowLevelState, num_records


@dataclass(frozen=True)
class NewDv:
    """An add to stage with a fresh DV deleting ``rows``.

    ``total`` is the file's physical row count when the add must be dropped once ``rows``
    covers it (the file is then only removed); None: always add.
    """

    path: str
    rows: BitMap64
    template: AddFile
    total: int | None = None


@dataclass(frozen=True)
class Restaging:
    """What one rebase does to the staged file actions (by normalized path)."""

    set_removes: Mapping[str, RemoveFile]
    drop_removes: frozenset[str]
    drop_adds: frozenset[str]
    new_dvs: tuple[NewDv, ...]
    rebased: frozenset[str]  # paths whose DVs were merged with a winner's (reported)


class RebaseKind(Protocol):
    def restaging(
        self,
        state: RowLevelState,
        removes: Mapping[str, RemoveFile],
        adds: Mapping[str, AddFile],
    ) -> Restaging: ...


def rebase(
    kind: RebaseKind,
    state: RowLevelState,
    removes: Mapping[str, RemoveFile],
    adds: Mapping[str, AddFile],
) -> tuple[dict[str, RemoveFile], dict[str, AddFile], frozenset[str]]:
    """The staged removes and adds after ``kind`` (one new DV file), and the rebased paths."""
    plan = kind.restaging(state, removes, adds)
    new_removes = {p: r for p, r in removes.items() if p not in plan.drop_removes}
    new_removes.update(plan.set_removes)
    new_adds = {p: a for p, a in adds.items() if p not in plan.drop_adds}
    kept = []
    for new in plan.new_dvs:
        if new.total is not None and len(new.rows) >= new.total:
            new_adds.pop(new.path, None)  # every row is deleted: the remove alone says so
        else:
            kept.append(new)
    descriptors = write_deletion_vectors(state.table_root, state.fs, [n.rows for n in kept])
    for new, dv in zip(kept, descriptors, strict=True):
        stats = stats_json.loosen_stats(new.template.stats)
        new_adds[new.path] = replace(new.template, deletion_vector=dv, stats=stats)
        state.remember(dv, new.rows)
    return new_removes, new_adds, plan.rebased


@dataclass(frozen=True)
class Rebase:
    """One file we modified that the winner also gave a new DV to, without overlap."""

    path: str
    winner_add: AddFile
    our_rows: BitMap64


@dataclass(frozen=True)
class Rebases:
    """The winner's DV updates we rebase onto, row by row.

    ``remove(F, W)`` plus ``add(F, W | ours)``, or only the remove when the union deletes
    every row of F. When we had removed F outright but the winner revived rows we did not
    match, F comes back with a DV so those rows stay alive.
    """

    files: tuple[Rebase, ...]

    def restaging(
        self,
        state: RowLevelState,
        removes: Mapping[str, RemoveFile],
        adds: Mapping[str, AddFile],
    ) -> Restaging:
        set_removes = {}
        new_dvs = []
        for r in self.files:
            winner_dv = r.winner_add.deletion_vector
            set_removes[r.path] = replace(removes[r.path], deletion_vector=winner_dv)
            ours = adds.get(r.path)
            # Without our own add we deleted every row we saw; the winner's add is the template.
            template = ours if ours is not None else replace(r.winner_add, data_change=True)
            total = num_records(r.winner_add.stats) or num_records(ours.stats if ours else None)
            rows = state.load(winner_dv) | r.our_rows
            new_dvs.append(NewDv(r.path, rows, template, total))
        paths = frozenset(r.path for r in self.files)
        return Restaging(set_removes, frozenset(), frozenset(), tuple(new_dvs), paths)


@dataclass(frozen=True)
class DmlTranslation:
    """How our DML moves onto a winning compaction's outputs.

    Attributes:
        sources: Source paths whose staged remove/add we drop (the compaction removed them).
        deletes: Output path -> rows we delete there (translated from our DVs/removes).
        read_rows: Output path -> rows we matched there.
        read_unknown: Outputs holding rows of files we read without row positions.
        outputs: The compaction's adds by path (the state we now change).
    """

    sources: frozenset[str]
    deletes: dict[str, BitMap64]
    read_rows: dict[str, BitMap64]
    read_unknown: frozenset[str]
    outputs: dict[str, AddFile]

    def restaging(
        self,
        state: RowLevelState,
        removes: Mapping[str, RemoveFile],
        adds: Mapping[str, AddFile],
    ) -> Restaging:
        """Our deletions restaged as DVs on the outputs (an output losing every row is
        removed whole)."""
        # Our staged versions of the sources go: the compaction removed those files.
        own_adds = {p for p in self.sources if p in adds}
        set_removes = {}
        new_dvs = []
        for path, deleted in sorted(self.deletes.items()):
            output = self.outputs[path]
            set_removes[path] = output.to_remove(data_change=True)
            union = state.load(output.deletion_vector) | deleted
            template = replace(output, data_change=True)
            new_dvs.append(NewDv(path, union, template, num_records(output.stats)))
        return Restaging(
            set_removes,
            self.sources,
            frozenset(own_adds),
            tuple(new_dvs),
            frozenset(self.deletes),
        )

    def reads_after(self, read_set: ReadSet) -> ReadSet:
        """Our read set on the outputs: the rows we read of the sources, translated."""
        files = set(read_set.files) | set(self.read_rows) | set(self.read_unknown)
        return replace(
            read_set,
            scans=list(read_set.scans),
            files=files,
            rows={**read_set.rows, **self.read_rows},
            rows_unknown=set(read_set.rows_unknown) | set(self.read_unknown),
            file_dvs={**read_set.file_dvs, **{p: self.outputs[p].dv_id for p in self.read_rows}},
        )


@dataclass(frozen=True)
class Carry:
    """A winner's deletions carried into our compaction's outputs.

    Attributes:
        sources: Source path -> the winner's remove or re-add we now remove instead.
        deletes: Output path -> rows to mark deleted there (in addition to existing DVs).
    """

    sources: dict[str, RemoveFile]
    deletes: dict[str, BitMap64]

    def restaging(
        self,
        state: RowLevelState,
        removes: Mapping[str, RemoveFile],
        adds: Mapping[str, AddFile],
    ) -> Restaging:
        """Remove the winner's versions of our sources; add DVs for its deletions to our
        outputs (still dataChange=false: the rows are gone from the table already)."""
        new_dvs = tuple(
            NewDv(path, state.load(adds[path].deletion_vector) | rows, adds[path])
            for path, rows in sorted(self.deletes.items())
            if rows
        )
        rebased = frozenset(n.path for n in new_dvs)
        return Restaging(self.sources, frozenset(), frozenset(), new_dvs, rebased)
