"""What Databricks documents, and what Delta OSS's file-level checker does, for one race.

Neither is run: Databricks' answer is its published matrix (reference/isolation-and-
concepts.md §2), Delta OSS's follows its ``ConflictChecker`` step by step on the base
table of :mod:`txsql.teaching.races` (file A: ids 1, 2 with a deletion vector; file B:
ids 3, 4). They sit beside txsql's live outcome so a reader sees where each system draws
the line.
"""

from __future__ import annotations

from txsql.teaching.races import COMMITTED, COMPACTIONS, Setting, partition_of

ABORTS = "✘"
DML = frozenset({"UPDATE", "DELETE", "MERGE"})
FILES = ("A", "B")


def _group(kind: str) -> str:
    if kind in DML:
        return "dml"
    if kind == "ZORDER":
        return "zorder"
    return "compaction" if kind in COMPACTIONS else "insert"


def databricks(our_kind: str, their_kind: str, setting: Setting) -> str:
    """Databricks' documented outcome: ``✔`` (cannot conflict) or ``✘`` (can conflict).

    Row-level concurrency (deletion vectors, unpartitioned) scopes conflicts to the same
    row; a partitioned table scopes them to the same partition. "Can conflict" is read as
    "aborts" when the two statements meet in that scope.
    """
    ours, theirs = _group(our_kind), _group(their_kind)
    row_level = setting.layout != "partitioned"
    overlap = setting.same_row if row_level else setting.same_partition
    pair = {ours, theirs}
    if pair == {"insert"} or (pair & {"insert"} and pair & {"compaction", "zorder"}):
        return COMMITTED
    if pair == {"insert", "dml"}:
        # Only the reader can lose, and a blind append only under Serializable.
        reader_loses = ours == "dml" and setting.level == "Serializable" and overlap
        return ABORTS if reader_loses else COMMITTED
    if pair == {"dml"}:
        return ABORTS if overlap else COMMITTED
    # Compactions on tables with deletion vectors: only ZORDER BY can conflict.
    return ABORTS if "zorder" in pair else COMMITTED


def _file(key: int) -> str:
    return FILES[partition_of(key) - 1]


def _reads(kind: str, key: int) -> set[str]:
    """Files a statement reads after partition pruning and data skipping on stats."""
    group = _group(kind)
    if group == "insert":
        return set()
    return {_file(key)} if group == "dml" else set(FILES)


def _removes(kind: str, key: int, partitioned: bool) -> set[str]:
    group = _group(kind)
    if group == "insert":
        return set()
    if group == "dml":
        return {_file(key)}
    if kind == "REORG" or (kind == "OPTIMIZE" and partitioned):
        # REORG rewrites files with a DV; OPTIMIZE leaves a lone DV-free file (B) alone.
        return {"A"}
    return set(FILES)


def delta_oss(our_kind: str, their_kind: str, setting: Setting) -> str:
    """Delta OSS's file-level outcome: ``✔`` or the exception, by its checker's steps."""
    partitioned = setting.layout == "partitioned"
    ours_key, theirs_key = setting.our_key, setting.their_key
    ours, theirs = _group(our_kind), _group(their_kind)
    # Step 5, added files we should have read. Compactions commit at SnapshotIsolation
    # (dataChange=false) and add no changed data; WriteSerializable skips blind appends.
    checks_adds = ours == "dml" and theirs in ("dml", "insert")
    if theirs == "insert" and setting.level != "Serializable":
        checks_adds = False
    # Read predicates keep only partition filters: unpartitioned, any added file matches.
    if checks_adds and (not partitioned or setting.same_partition):
        return "ConcurrentAppend"
    their_removes = _removes(their_kind, theirs_key, partitioned)
    if their_removes & _reads(our_kind, ours_key):
        return "ConcurrentDeleteRead"
    if their_removes & _removes(our_kind, ours_key, partitioned):
        return "ConcurrentDeleteDelete"
    return COMMITTED
