"""A corrupted-file matrix over ``_delta_log`` (issue 9 items 3, 5 and 9c).

Each case damages a copy of a small real table (tests/log/corrupt_table.py: versions 0..8,
checkpoints at 3 and 6, a ``.crc`` after every commit). Then every version is read and one
append is attempted. A read either returns exactly the ids written up to that version (the
ground truth kept by the test) or raises CorruptLogError; a refused write leaves the
``_delta_log`` file list unchanged. Cases that must stay readable say so, and the table
written after them is checked with DuckDB and deltalake too.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.interop.readers import deltalake_rows, duckdb_rows
from tests.log.corrupt_table import (
    LATEST,
    append,
    build_table,
    commit_files,
    data_file,
    log_file,
    read_ids,
    rows_at,
)
from txsql.errors import (
    CheckpointFallbackWarning,
    ChecksumMismatchError,
    ChecksumUnreadableWarning,
    CorruptLogError,
    VersionNotFoundError,
)
from txsql.log.deltalog import DeltaLog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Damage = Callable[[Path], None]


def _truncate(name: str | int, suffix: str = "json") -> Damage:
    def damage(root: Path) -> None:
        path = log_file(root, name, suffix)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    return damage


def _garbage(name: str | int, suffix: str = "json") -> Damage:
    def damage(root: Path) -> None:
        log_file(root, name, suffix).write_bytes(b"\x00\xffnot a delta file\n{{{")

    return damage


def _empty(name: str | int, suffix: str = "json") -> Damage:
    def damage(root: Path) -> None:
        log_file(root, name, suffix).write_bytes(b"")

    return damage


def _delete(*names: str | int, suffix: str = "json") -> Damage:
    def damage(root: Path) -> None:
        for name in names:
            log_file(root, name, suffix).unlink()

    return damage


def _swap(a: int, b: int, suffix: str = "json") -> Damage:
    def damage(root: Path) -> None:
        pa_, pb = log_file(root, a, suffix), log_file(root, b, suffix)
        da, db = pa_.read_bytes(), pb.read_bytes()
        pa_.write_bytes(db)
        pb.write_bytes(da)

    return damage


def _drop_add_line(version: int) -> Damage:
    def damage(root: Path) -> None:
        path = log_file(root, version)
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(ln for ln in lines if not ln.startswith(b'{"add"')))

    return damage


def _drop_checkpoint_add_row(version: int) -> Damage:
    def damage(root: Path) -> None:
        path = log_file(root, f"{version:020d}.checkpoint.parquet")
        table = pq.read_table(path)
        valid = pc.is_valid(table.column("add"))
        first_add = valid.to_pylist().index(True)
        keep = pa.array([i != first_add for i in range(table.num_rows)])
        pq.write_table(table.filter(keep), path)

    return damage


def _copy_checkpoint(src: int, dst: int) -> Damage:
    def damage(root: Path) -> None:
        shutil.copyfile(
            log_file(root, f"{src:020d}.checkpoint.parquet"),
            log_file(root, f"{dst:020d}.checkpoint.parquet"),
        )

    return damage


def _multipart_with_a_part_missing(version: int) -> Damage:
    def damage(root: Path) -> None:
        classic = log_file(root, f"{version:020d}.checkpoint.parquet")
        part = log_file(root, f"{version:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
        classic.rename(part)  # part 2 of 2 never appears

    return damage


def _write(name: str, body: bytes) -> Damage:
    def damage(root: Path) -> None:
        log_file(root, name).write_bytes(body)

    return damage


def _both(*damages: Damage) -> Damage:
    def damage(root: Path) -> None:
        for d in damages:
            d(root)

    return damage


@dataclass(frozen=True)
class Case:
    damage: Damage
    readable: bool  # the latest version (and so a write) must work
    warns: type[Warning] | None = None  # expected on reading the latest version
    message: str = ""  # expected in the CorruptLogError of the latest version


CASES = {
    "commit-truncated": Case(_truncate(7), False, message="00000000000000000007.json"),
    "commit-garbage": Case(_garbage(7), False, message="00000000000000000007.json"),
    "commit-empty": Case(_empty(7), False, message="00000000000000000007.json is empty"),
    "latest-commit-empty": Case(_empty(8), False, message="is empty"),
    "gap-after-checkpoint": Case(_delete(7), False, message="missing commit 7"),
    "latest-commit-deleted": Case(_delete(8), False, message="commit 8 of"),
    "gap-before-checkpoint": Case(_delete(2), True),
    # Appends commute: version 8 is right again; version 7 contradicts its checksum.
    "commits-swapped": Case(_swap(7, 8), True),
    "commit-missing-a-line": Case(_drop_add_line(7), False, message="numFiles"),
    "checkpoint-truncated": Case(
        _truncate("00000000000000000006.checkpoint.parquet"), True, CheckpointFallbackWarning
    ),
    "checkpoint-garbage": Case(
        _garbage("00000000000000000006.checkpoint.parquet"), True, CheckpointFallbackWarning
    ),
    "checkpoint-empty": Case(
        _empty("00000000000000000006.checkpoint.parquet"), True, CheckpointFallbackWarning
    ),
    "checkpoint-deleted": Case(_delete("00000000000000000006.checkpoint.parquet"), True),
    "checkpoint-missing-a-row": Case(_drop_checkpoint_add_row(6), True, CheckpointFallbackWarning),
    "checkpoint-part-missing": Case(
        _multipart_with_a_part_missing(6), True, CheckpointFallbackWarning
    ),
    "checkpoint-swapped": Case(_copy_checkpoint(3, 6), True, CheckpointFallbackWarning),
    "last-checkpoint-garbage": Case(_garbage("_last_checkpoint"), True),
    "last-checkpoint-truncated": Case(_truncate("_last_checkpoint"), True),
    "last-checkpoint-deleted": Case(_delete("_last_checkpoint"), True),
    "last-checkpoint-wrong-version": Case(
        _write("_last_checkpoint", b'{"version":99,"size":3}'), True
    ),
    "checksum-garbage": Case(_garbage(8, "crc"), True, ChecksumUnreadableWarning),
    "checkpoint-damaged-commits-cleaned": Case(
        _both(
            _garbage("00000000000000000006.checkpoint.parquet"),
            _delete("00000000000000000003.checkpoint.parquet"),
            _delete(0, 1, 2, 3, 4, 5),
        ),
        False,
        message="cleaned up",
    ),
    "checkpoint-damaged-and-gap-below": Case(
        _both(_truncate("00000000000000000006.checkpoint.parquet"), _delete(4)),
        False,
        message="cleaned up or are missing",
    ),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corrupt") / "pristine"
    build_table(root)
    return root


def _copy(pristine: Path, tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(pristine, root)
    return root


def test_pristine_table_reads_everywhere(pristine: Path) -> None:
    log = DeltaLog.for_path(str(pristine))
    for v in range(LATEST + 1):
        assert read_ids(log, v) == rows_at(v)
    expected = [(i,) for i in rows_at(LATEST)]
    assert duckdb_rows(str(pristine), LATEST, "id") == expected
    assert deltalake_rows(str(pristine), LATEST, "id") == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_damaged_log(name: str, pristine: Path, tmp_path: Path) -> None:
    case = CASES[name]
    root = _copy(pristine, tmp_path)
    case.damage(root)
    # Every older version: the right rows or a CorruptLogError (never wrong rows). A
    # version whose commits were cleaned up may also be "not found".
    for v in range(LATEST):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CheckpointFallbackWarning)
            warnings.simplefilter("ignore", ChecksumUnreadableWarning)
            try:
                ids = read_ids(DeltaLog.for_path(str(root)), v)
            except (CorruptLogError, VersionNotFoundError):
                continue
        assert ids == rows_at(v), f"wrong rows at version {v}"

    before = sorted(p.name for p in (root / "_delta_log").iterdir())
    log = DeltaLog.for_path(str(root))
    if not case.readable:
        with pytest.raises(CorruptLogError, match=case.message):
            read_ids(log)
        with pytest.raises(CorruptLogError):
            append(root, [-1])
        # Nothing written into the damaged log: not a commit, not a checksum, nothing.
        assert sorted(p.name for p in (root / "_delta_log").iterdir()) == before
        return
    if case.warns is not None:
        with pytest.warns(case.warns):
            assert read_ids(log) == rows_at(LATEST)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert read_ids(log) == rows_at(LATEST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckpointFallbackWarning)
        warnings.simplefilter("ignore", ChecksumUnreadableWarning)
        assert append(root, [-1]) == LATEST + 1
        assert read_ids(DeltaLog.for_path(str(root))) == sorted([-1, *rows_at(LATEST)])
    assert len(commit_files(root)) == len([n for n in before if n.endswith(".json")]) + 1


@pytest.mark.parametrize("name", ["checkpoint-truncated", "checkpoint-missing-a-row"])
def test_table_repaired_by_fallback_reads_in_duckdb_and_deltalake(
    name: str, pristine: Path, tmp_path: Path
) -> None:
    """After a fallback read and a write, independent readers agree with the truth."""
    root = _copy(pristine, tmp_path)
    CASES[name].damage(root)
    with pytest.warns(CheckpointFallbackWarning):
        append(root, [-1])
    expected = [(i,) for i in sorted([-1, *rows_at(LATEST)])]
    assert duckdb_rows(str(root), LATEST + 1, "id") == expected
    assert deltalake_rows(str(root), LATEST + 1, "id") == expected


def test_checksum_mismatch_names_version_and_difference(pristine: Path, tmp_path: Path) -> None:
    root = _copy(pristine, tmp_path)
    _drop_add_line(LATEST)(root)
    with pytest.raises(ChecksumMismatchError) as info:
        DeltaLog.for_path(str(root)).snapshot()
    message = info.value.message
    assert f"version {LATEST}" in message and "numFiles: checksum 9, log 8" in message


def test_cached_log_sees_a_gap_that_appears_later(pristine: Path, tmp_path: Path) -> None:
    """A DeltaLog that cached an old version must not hand a writer a stale latest."""
    root = _copy(pristine, tmp_path)
    log = DeltaLog.for_path(str(root))
    assert read_ids(log, 3) == rows_at(3)  # time travel: caches version 3
    assert log.snapshot().version == LATEST  # caches the latest
    _delete(7)(root)  # commit 6 is bridged by checkpoint 6; 7 is not
    before = commit_files(root)
    with pytest.raises(CorruptLogError, match="missing commit 7"):
        log.snapshot()
    with pytest.raises(CorruptLogError, match="missing commit 7"):
        log.latest_version()
    with pytest.raises(CorruptLogError, match="missing commit 7"):
        log.check_next_version(LATEST + 1)
    assert commit_files(root) == before


def test_writer_refuses_to_fill_a_gap_below_it(pristine: Path, tmp_path: Path) -> None:
    """A transaction pinned before the damage: its put-if-absent must not land in the gap."""
    from txsql.txn.transaction import Transaction

    root = _copy(pristine, tmp_path)
    log = DeltaLog.for_path(str(root))
    txn = Transaction(log)
    assert txn.snapshot() is not None
    _delete(LATEST)(root)  # the version the writer read vanished, and so did its checksum
    _delete(LATEST, suffix="crc")(root)
    before = commit_files(root)
    txn.stage([data_file(root, [-1])])
    with pytest.raises(CorruptLogError, match=f"commits {LATEST}..{LATEST} it builds on"):
        txn.commit("WRITE")
    assert commit_files(root) == before


# --- end to end through Session.sql (Spark) -------------------------------------------


@pytest.fixture()
def session(spark: SparkSession, tmp_path: Path) -> object:
    import txsql

    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _log_names(location: str) -> list[str]:
    return sorted(p.name for p in (Path(location) / "_delta_log").iterdir())


@pytest.mark.spark
def test_time_travel_then_insert_never_fills_a_gap(session: object) -> None:
    """Issue 9 item 3: a session that time-travelled must not commit into a gap."""
    import txsql

    assert isinstance(session, txsql.Session)
    s = session
    s.sql("CREATE TABLE g (id BIGINT)")
    for v in range(1, 5):
        assert s.sql(f"INSERT INTO g VALUES ({v})").version == v
    location = Path(s.table("g").location)
    assert sorted(r[0] for r in s.sql("SELECT id FROM g VERSION AS OF 1").df.collect()) == [1]
    # Commit 3 and its checksum vanish (as in a log written by an engine without .crc).
    log_file(location, 3).unlink()
    log_file(location, 3, "crc").unlink()
    before = _log_names(str(location))
    with pytest.raises(CorruptLogError, match="missing commit 3"):
        s.sql("INSERT INTO g VALUES (100)")
    assert _log_names(str(location)) == before  # nothing written into the damaged log
    with pytest.raises(CorruptLogError, match="missing commit 3"):
        s.sql("SELECT count(*) FROM g")
    # An intact earlier version stays readable.
    rows = s.sql("SELECT id FROM g VERSION AS OF 2").df.collect()
    assert sorted(r[0] for r in rows) == [1, 2]


@pytest.mark.spark
def test_lost_newest_commit_is_detected_by_its_checksum(session: object) -> None:
    import txsql

    assert isinstance(session, txsql.Session)
    s = session
    s.sql("CREATE TABLE h (id BIGINT)")
    s.sql("INSERT INTO h VALUES (1)")
    s.sql("INSERT INTO h VALUES (2)")
    location = s.table("h").location
    log_file(Path(location), 2).unlink()  # its .crc stays behind
    before = _log_names(location)
    with pytest.raises(CorruptLogError, match="commit 2 of"):
        s.sql("INSERT INTO h VALUES (3)")
    assert _log_names(location) == before


@pytest.mark.parametrize(
    "damage", [_truncate(6, "checkpoint.parquet"), _drop_checkpoint_add_row(6)]
)
def test_log_cleanup_keeps_commits_a_damaged_checkpoint_cannot_replace(
    damage: Damage, pristine: Path, tmp_path: Path
) -> None:
    from txsql.log.cleanup import cleanup_expired_logs

    root = _copy(pristine, tmp_path)
    damage(root)
    far_future = 10**15  # every file is past the retention
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deleted = cleanup_expired_logs(DeltaLog.for_path(str(root)), now_ms=far_future)
        # Only what the intact checkpoint 3 covers may go; versions 3.. stay replayable.
        assert all(int(name[:20]) < 3 for name in deleted)
        assert read_ids(DeltaLog.for_path(str(root))) == rows_at(LATEST)
