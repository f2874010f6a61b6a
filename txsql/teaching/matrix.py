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
from txsql.teaching.anomalies import LEVELS
from txsql.teaching.documented import ABORTS, databricks, delta_oss
from txsql.teaching.races import (
    COMMITTED,
    SETTINGS,
    STATEMENTS,
    RaceTrack,
    Row,
    SerialRows,
    Setting,
    Statement,
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
BEYOND_STYLE = "background:var(--jp-success-color3,#e3f4e4)"
WRONG_STYLE = "color:var(--jp-error-color1,#c62828);font-weight:600"


def short(outcome: str) -> str:
    return SHORT.get(outcome, outcome)


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
            f'<td style="{style};white-space:nowrap"><b>{esc(short(self.txsql))}</b>{serial} '
            f'<span style="{MUTED};font-size:10px">DB {esc(self.databricks)} · '
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
    serial_rows: SerialRows | None = None,
) -> ConflictMatrix:
    """Race every statement (row, ours) against every statement in ``columns`` (theirs).

    Args:
        spark: the SparkSession.
        statements: name -> Statement; default :data:`~txsql.teaching.races.STATEMENTS`.
        settings: layouts and keys; default :data:`~txsql.teaching.races.SETTINGS`.
        levels: isolation levels of our transaction, each setting run at every one.
        columns: the statements theirs runs (default: all of ``statements``).
        serial_rows: the serial-order oracle, texts -> sorted rows of the base table after
            them; default DuckDB in memory, else replaying on fresh copies with txsql.
    """
    chosen = dict(statements or STATEMENTS)
    theirs_names = list(columns or chosen)
    track = RaceTrack(spark, serial_rows)
    cells = []
    try:
        for base in settings or SETTINGS:
            for level in levels:
                setting = base.at(level)
                for our_name, ours in chosen.items():
                    for their_name in theirs_names:
                        theirs = chosen[their_name]
                        result = track.race(setting, ours, theirs)
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
        track.close()
    return ConflictMatrix(cells)
