"""The write-conflict matrix, live: every pair of writes raced on txsql, beside the docs.

``conflict_matrix(spark)`` races every statement of :data:`~txsql.teaching.races.STATEMENTS`
(INSERT, UPDATE, DELETE, MERGE, OPTIMIZE, OPTIMIZE ZORDER BY, REORG ... APPLY (PURGE))
against every other, in each setting (one file with deletion vectors, same row or
different rows; partitioned, same partition or different partitions) at both isolation
levels. Each cell shows txsql's outcome, Databricks' documented one, Delta OSS's
file-level one, and whether the final rows equal a serial order of the two statements
(they must: txsql never commits a non-serializable pair). Cells where txsql commits and
Databricks aborts are highlighted: there txsql goes beyond Databricks.

Teachers can pass their own statements (``statements={"name": Statement(kind, sql)}``,
SQL with ``{t}``, ``{k}``, ``{p}``, ``{new}``), settings and levels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from txsql.magics.render import CELL_STYLE, MUTED, TABLE_STYLE, Column, esc, text_table
from txsql.teaching.anomalies import LEVELS, ScenarioError
from txsql.teaching.races import (
    COMMITTED,
    COMPACTIONS,
    SETTINGS,
    STATEMENTS,
    RaceTrack,
    Row,
    SerialRows,
    Setting,
    Statement,
    partition_of,
)

SHORT = {
    "ConcurrentAppend": "A",
    "ConcurrentDeleteRead": "DR",
    "ConcurrentDeleteDelete": "DD",
    "MetadataChanged": "MC",
    "ProtocolChanged": "PC",
}
LEGEND = (
    "Row: our statement (begins first, commits last). Column: theirs (begins after ours "
    "ran, commits first). Bold: txsql, live. DB: Databricks' documented outcome. OSS: "
    "Delta OSS's file-level checker. ✔ both commit, ✘ conflict; A = ConcurrentAppend, "
    "DR = ConcurrentDeleteRead, DD = ConcurrentDeleteDelete. Green: txsql commits where "
    "Databricks aborts."
)
ABORTS = "✘"
BEYOND_STYLE = "background:var(--jp-success-color3,#e3f4e4)"
WRONG_STYLE = "color:var(--jp-error-color1,#c62828);font-weight:600"


def short(outcome: str) -> str:
    return SHORT.get(outcome, outcome)


# --- the documented outcomes --------------------------------------------------------------
# Neither is run: Databricks' answer is its published matrix (reference/isolation-and-
# concepts.md §2); Delta OSS's follows its ConflictChecker step by step on the base table of
# races.py (file A: ids 1, 2 with a deletion vector; file B: ids 3, 4).

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
    their_removes = _removes(their_kind, theirs_key, partitioned)
    # Step 5, added files we should have read: only a reader checks it (a compaction
    # commits at SnapshotIsolation, a blind append reads nothing). WriteSerializable skips
    # a blind append's files; a compaction's dataChange=false files are not skipped.
    if theirs == "insert":
        their_adds = {partition_of(theirs_key)} if setting.level == "Serializable" else set()
    elif theirs == "dml":
        their_adds = {partition_of(theirs_key)}
    else:  # a compaction writes its new files into the partitions it rewrote
        their_adds = {FILES.index(f) + 1 for f in their_removes}
    # Read predicates keep only partition filters: unpartitioned, any added file matches.
    if ours == "dml" and their_adds and (not partitioned or partition_of(ours_key) in their_adds):
        return "ConcurrentAppend"
    if their_removes & _reads(our_kind, ours_key):
        return "ConcurrentDeleteRead"
    if their_removes & _removes(our_kind, ours_key, partitioned):
        return "ConcurrentDeleteDelete"
    return COMMITTED


@dataclass(frozen=True)
class Cell:
    """One race: txsql's outcome beside the documented ones, and the serial-order check."""

    setting: Setting
    ours: str
    theirs: str
    txsql: str
    databricks: str
    delta_oss: str
    serial: bool
    rows: tuple[Row, ...]

    @property
    def beyond_databricks(self) -> bool:
        return self.txsql == COMMITTED and self.databricks == ABORTS

    def html(self) -> str:
        style = f"{CELL_STYLE};{BEYOND_STYLE}" if self.beyond_databricks else CELL_STYLE
        serial = "" if self.serial else f' <span style="{WRONG_STYLE}">≠ serial</span>'
        return (
            f'<td style="{style};white-space:nowrap"><b>{esc(short(self.txsql))}</b>{serial}'
            f'<br><span style="{MUTED};font-size:10px">DB {esc(self.databricks)} · '
            f"OSS {esc(short(self.delta_oss))}</span></td>"
        )

    def text(self) -> str:
        mark = "" if self.serial else " NOT SERIAL"
        return f"{short(self.txsql)} (DB {self.databricks}, OSS {short(self.delta_oss)}){mark}"


class ConflictMatrix:
    """The cells of every setting, rendered one table per setting (HTML in a notebook)."""

    def __init__(self, cells: Sequence[Cell]) -> None:
        self.cells = tuple(cells)

    def settings(self) -> list[Setting]:
        return list(dict.fromkeys(c.setting for c in self.cells))

    def outcomes(self, setting: Setting) -> dict[tuple[str, str], str]:
        """txsql's outcome per (ours, theirs) in one setting (with its level)."""
        return {(c.ours, c.theirs): c.txsql for c in self.cells if c.setting == setting}

    def beyond_databricks(self) -> list[Cell]:
        return [c for c in self.cells if c.beyond_databricks]

    def not_serial(self) -> list[Cell]:
        return [c for c in self.cells if not c.serial]

    def _grid(self, setting: Setting) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
        cells = {(c.ours, c.theirs): c for c in self.cells if c.setting == setting}
        rows = list(dict.fromkeys(ours for ours, _ in cells))
        columns = list(dict.fromkeys(theirs for _, theirs in cells))
        return rows, columns, cells

    def _summary(self) -> str:
        serial = len(self.cells) - len(self.not_serial())
        return (
            f"{len(self.cells)} races; final rows equal a serial order in {serial}; "
            f"txsql commits where Databricks aborts in {len(self.beyond_databricks())}."
        )

    def _repr_html_(self) -> str:
        parts = [f'<div style="font-size:12px;max-width:960px">{esc(LEGEND)}</div>']
        for setting in self.settings():
            rows, columns, cells = self._grid(setting)
            head = "".join(
                f'<th style="{CELL_STYLE};text-align:left">{esc(c)}</th>' for c in columns
            )
            body = "".join(
                f'<tr><th style="{CELL_STYLE};text-align:left">{esc(ours)}</th>'
                + "".join(cells[(ours, theirs)].html() for theirs in columns)
                + "</tr>"
                for ours in rows
            )
            parts.append(
                f'<div style="margin-top:8px"><b>{esc(setting.name)}</b> · {esc(setting.level)}'
                f'</div><table style="{TABLE_STYLE}"><thead><tr>'
                f'<th style="{CELL_STYLE};text-align:left">ours ↓ theirs →</th>{head}'
                f"</tr></thead><tbody>{body}</tbody></table>"
            )
        parts.append(f'<div style="{MUTED};font-size:11px">{esc(self._summary())}</div>')
        return "".join(parts)

    def __repr__(self) -> str:
        blocks = []
        for setting in self.settings():
            rows, columns, cells = self._grid(setting)
            header = [Column("ours", ""), *(Column(c, "") for c in columns)]
            lines = [(o, *(cells[(o, t)].text() for t in columns)) for o in rows]
            blocks.append(f"{setting.name} · {setting.level}\n{text_table(header, lines)}")
        return "\n\n".join([*blocks, self._summary()])


def conflict_matrix(
    spark: Any,
    statements: Mapping[str, Statement] | None = None,
    settings: Iterable[Setting] | None = None,
    levels: Sequence[str] = LEVELS,
    columns: Sequence[str] | None = None,
    rows: Sequence[str] | None = None,
    serial_rows: SerialRows | None = None,
    track: RaceTrack | None = None,
) -> ConflictMatrix:
    """Race every statement (row, ours) against every statement in ``columns`` (theirs).

    Args:
        spark: the SparkSession.
        statements: name -> Statement; default :data:`~txsql.teaching.races.STATEMENTS`.
        settings: layouts and keys; default :data:`~txsql.teaching.races.SETTINGS`.
        levels: isolation levels of our transaction, each setting run at every one.
        columns: the statements theirs runs (default: all of ``statements``).
        rows: the statements ours runs (default: all of ``statements``).
        serial_rows: the serial-order oracle, texts -> sorted rows of the base table after
            them; default DuckDB in memory, else replaying on fresh copies with txsql.
        track: base tables (and races) to reuse across calls; closed by its owner.
    """
    chosen = dict(statements or STATEMENTS)
    unknown = [name for name in [*(rows or ()), *(columns or ())] if name not in chosen]
    if unknown:
        raise ScenarioError(f"no statement named {unknown}; the statements are {list(chosen)}")
    owned = track is None
    races = track or RaceTrack(spark, serial_rows)
    cells = []
    try:
        for base in settings or SETTINGS:
            for level in levels:
                setting = base.at(level)
                for our_name in rows or chosen:
                    ours = chosen[our_name]
                    for their_name in columns or chosen:
                        theirs = chosen[their_name]
                        result = races.race(setting, ours, theirs)
                        cells.append(
                            Cell(
                                setting,
                                our_name,
                                their_name,
                                result.outcome,
                                databricks(ours.kind, theirs.kind, setting),
                                delta_oss(ours.kind, theirs.kind, setting),
                                result.serial,
                                result.rows,
                            )
                        )
    finally:
        if owned:
            races.close()
    return ConflictMatrix(cells)
