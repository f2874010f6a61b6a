"""Row-level conflict resolution on deletion vectors (txsql's refinement of Delta's rules).

For every live file we keep the exact DV we are (re)based on: ``base``. When a winner
replaced ``(F, base)`` by ``(F, W)`` (a new DV, a smaller DV, or no DV at all: RESTORE, a
foreign writer, any DV replacement) it changed two row sets:

* ``W - base``: rows it deleted. They conflict if they intersect rows we matched (read
  set) or rows we delete ourselves (``ours = ourDV - base``, computed against OUR base);
* ``base - W``: rows it *revived*. For our reads they are added rows, checked like
  appended rows (the caller asks the row predicate hook about exactly those rows).

Otherwise we *rebase* (:mod:`txsql.txn.rowlevel.rebase`): commit ``remove(F, W)`` +
``add(F, W | ours)`` with a freshly written DV. A row the winner revived that we did not
match stays alive (it is in neither ``W`` nor ``ours``), so a rebase never deletes a row we
did not match. Whatever cannot be decided row by row (a scan that reported no rows, a file
rewritten rather than given a DV, a winner that removed a DV we never saw, missing stats) is
left to Delta's file-level rules by :meth:`RowLevelState.decidable`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pyroaring import BitMap64

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.dv.store import read_deletion_vector
from txsql.log import stats_json
from txsql.log.actions import AddFile, RemoveFile
from txsql.storage.filesystem import FileIO
from txsql.txn.readset import ReadSet
from txsql.txn.winner import WinningCommit


def num_records(stats: str | None) -> int | None:
    """``numRecords`` (physical rows) from a stats string, if present."""
    if not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def total_records(files: Sequence[AddFile]) -> int | None:
    """Physical rows of ``files`` from their stats; None if some file lacks ``numRecords``."""
    counts = [num_records(f.stats) for f in files]
    return None if None in counts else sum(c or 0 for c in counts)


def loosen_stats(stats: str | None) -> str | None:
    """The same stats marked ``tightBounds: false`` (required for adds carrying a DV).

    A textual edit: every bound keeps its exact spelling (see :mod:`txsql.log.stats_json`).
    """
    return stats_json.loosen_stats(stats)


class RowLevelState:
    """Per-file row knowledge of one committing transaction, kept across winners.

    Args:
        table_root: Where ``u`` DV files live (and new ones are written).
        fs: File access for DV files.
        read_files: The read snapshot's live files by normalized path.
        removes: Our staged removes by normalized path, as first staged.
        adds: Our staged adds by normalized path, as first staged.
    """

    def __init__(
        self,
        table_root: str,
        fs: FileIO,
        read_files: Mapping[str, AddFile],
        removes: Mapping[str, RemoveFile],
        adds: Mapping[str, AddFile],
    ) -> None:
        self.table_root = table_root
        self.fs = fs
        # The exact DV each live path has in the state we are (re)based on (None: no DV).
        self.base: dict[str, DeletionVectorDescriptor | None] = {
            p: f.deletion_vector for p, f in read_files.items()
        }
        self._read_files = dict(read_files)
        self._removes = dict(removes)
        self._adds = dict(adds)
        self._bitmaps: dict[str, BitMap64] = {}
        self._ours: dict[str, BitMap64 | None] = {}

    def restage(self, removes: Mapping[str, RemoveFile], adds: Mapping[str, AddFile]) -> None:
        """Replace our staged removes and adds (a compaction's translation made them
        describe other files); forgets the rows computed from the old ones."""
        self._removes = dict(removes)
        self._adds = dict(adds)
        self._ours = {}

    def load(self, dv: DeletionVectorDescriptor | None) -> BitMap64:
        """The rows ``dv`` deletes (empty for no DV), cached by DV id."""
        if dv is None:
            return BitMap64()
        cached = self._bitmaps.get(dv.unique_id)
        if cached is None:
            cached = read_deletion_vector(dv, self.table_root, self.fs)
            self._bitmaps[dv.unique_id] = cached
        return cached

    def remember(self, dv: DeletionVectorDescriptor, rows: BitMap64) -> None:
        """Cache a DV we just wrote, so a later winner need not read it back."""
        self._bitmaps[dv.unique_id] = rows

    def read_file(self, path: str) -> AddFile | None:
        """The add of ``path`` in our read snapshot (None: it was not live then)."""
        return self._read_files.get(path)

    def modifies(self, path: str) -> bool:
        return path in self._removes

    def our_rows(self, path: str) -> BitMap64 | None:
        """Rows of ``path`` our staged actions delete (None: not knowable row by row)."""
        if path not in self._ours:
            self._ours[path] = self._compute_our_rows(path)
        return self._ours[path]

    def _compute_our_rows(self, path: str) -> BitMap64 | None:
        remove = self._removes.get(path)
        if remove is None:
            return BitMap64()
        add = self._adds.get(path)
        old = self.load(remove.deletion_vector)
        if add is not None:
            if add.deletion_vector is None:
                return None  # rewritten in place without a DV: not a merge-on-read change
            return self.load(add.deletion_vector) - old
        everything = self._all_rows(path, remove)
        return None if everything is None else everything - old

    def base_id(self, path: str) -> str | None:
        dv = self.base.get(path)
        return dv.unique_id if dv is not None else None

    def decidable(self, read_set: ReadSet, path: str, remove: RemoveFile) -> bool:
        """Whether the winner's replacement of ``path`` can be judged row by row."""
        if read_set.read_whole_table or path not in self.base:
            return False
        if self.base_id(path) != remove.dv_id:
            return False  # the winner removed a DV we never saw: not comparable
        if path in read_set.files and not read_set.rows_known(path):
            return False
        return not (self.modifies(path) and self.our_rows(path) is None)

    def base_rows(self, path: str) -> BitMap64:
        """Rows deleted in the state we are based on."""
        return self.load(self.base.get(path))

    def newly_deleted(self, path: str, add: AddFile) -> BitMap64:
        """Rows the winner's ``add`` deletes that our base did not: ``W - base``."""
        return self.load(add.deletion_vector) - self.base_rows(path)

    def revived(self, path: str, add: AddFile) -> BitMap64:
        """Rows our base deleted that the winner's ``add`` keeps alive: ``base - W``."""
        return self.base_rows(path) - self.load(add.deletion_vector)

    def removed_rows(self, path: str, remove: RemoveFile) -> BitMap64 | None:
        """Rows a winner's plain ``remove`` of ``path`` (no re-add) deleted, if knowable."""
        if path not in self.base or self.base_id(path) != remove.dv_id:
            return None
        everything = self._all_rows(path, remove)
        return None if everything is None else everything - self.base_rows(path)

    def _all_rows(self, path: str, remove: RemoveFile) -> BitMap64 | None:
        """Every physical row of ``path`` (None when no stats give its row count)."""
        known = self._read_files.get(path)
        total = num_records(remove.stats) or num_records(known.stats if known else None)
        if total is None:
            return None
        everything = BitMap64()
        everything.add_range(0, total)
        return everything

    def advance(self, winner: WinningCommit) -> None:
        """Move our base past a winner we were not in conflict with."""
        for path in winner.removes:
            self.base.pop(path, None)
        for path, add in winner.adds.items():
            self.base[path] = add.deletion_vector
