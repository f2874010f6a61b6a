"""``%txsql history t``: the commit log as a table plus a timeline picture of versions.

The timeline puts versions left to right (oldest first), labels each with its operation
and the rows it added, updated or removed, and draws an arc from a commit's read version
when other commits landed in between: those commits won the race and this one was checked
against them and rebased.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from txsql.magics.readable import HISTORY_SUMMARY_COLUMNS, history_summary
from txsql.magics.render import (
    MUTED,
    Column,
    esc,
    html_table,
    text_table,
)

HISTORY_COLUMNS = (
    Column("version", "bigint"),
    Column("timestamp", "timestamp"),
    Column("operation", "string"),
    Column("readVersion", "bigint"),
    Column("isolationLevel", "string"),
    Column("isBlindAppend", "boolean"),
    Column("operationParameters", "map<string,string>"),
    Column("operationMetrics", "map<string,string>"),
)

MAX_TIMELINE = 30
_STEP = 92
_COLORS = {
    "WRITE": "#2e7d32",
    "CREATE": "#1565c0",
    "DELETE": "#c62828",
    "UPDATE": "#ef6c00",
    "MERGE": "#6a1b9a",
    "RESTORE": "#00838f",
    "OPTIMIZE": "#5d4037",
}


@dataclass(frozen=True, slots=True)
class Commit:
    """One version as the timeline needs it."""

    version: int
    operation: str
    read_version: int | None
    added: int
    updated: int
    removed: int

    @property
    def rebased_over(self) -> tuple[int, int] | None:
        """The versions that committed between our read and our commit (they won)."""
        if self.read_version is None or self.read_version >= self.version - 1:
            return None
        return self.read_version + 1, self.version - 1

    @property
    def changes(self) -> str:
        parts = []
        if self.added:
            parts.append(f"+{self.added}")
        if self.updated:
            parts.append(f"~{self.updated}")
        if self.removed:
            parts.append(f"−{self.removed}")
        return " ".join(parts)


def commits_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[Commit]:
    """Timeline entries from DESCRIBE HISTORY rows (any order), oldest first."""
    commits = []
    for row in rows:
        metrics = row.get("operationMetrics") or {}
        commits.append(
            Commit(
                version=int(row["version"]),
                operation=str(row.get("operation") or "?"),
                read_version=_int(row.get("readVersion")),
                added=_first(metrics, "numTargetRowsInserted", "numOutputRows", "numInsertedRows"),
                updated=_first(metrics, "numTargetRowsUpdated", "numUpdatedRows"),
                removed=_first(metrics, "numTargetRowsDeleted", "numDeletedRows"),
            )
        )
    commits.sort(key=lambda c: c.version)
    return commits


def _first(metrics: Mapping[str, Any], *names: str) -> int:
    # Operations name the same count differently (MERGE's numTargetRowsInserted, a WRITE's
    # numOutputRows); the first one present wins.
    for name in names:
        value = _int(metrics.get(name))
        if value is not None:
            return value
    return 0


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def timeline_svg(commits: Sequence[Commit]) -> str:
    """A small inline SVG: one dot per version, arcs for commits that were rebased."""
    shown = list(commits)[-MAX_TIMELINE:]
    if not shown:
        return ""
    first = shown[0].version
    # Labels are centred on their dot and narrower than _STEP (see _short): half a step
    # of margin on each side keeps the first and the last label inside the picture.
    width = _STEP * len(shown)
    height = 96
    axis_y = 50

    def x(version: int) -> float:
        return _STEP / 2 + _STEP * (version - first)

    parts = [
        f'<svg class="txsql-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
        'font-size="10">',
        f'<line x1="10" y1="{axis_y}" x2="{width - 10}" y2="{axis_y}" stroke="#999"/>',
    ]
    for commit in shown:
        race = commit.rebased_over
        if race is not None and race[0] - 1 >= first:
            start, end = x(race[0] - 1), x(commit.version)
            top = axis_y - 24 - min(14, 4 * (race[1] - race[0]))
            parts.append(
                f'<path d="M {start} {axis_y - 6} Q {(start + end) / 2} {top} {end} {axis_y - 6}"'
                ' fill="none" stroke="#999" stroke-dasharray="3,2">'
                f"<title>{esc(_race_text(commit))}</title></path>"
            )
    for commit in shown:
        cx = x(commit.version)
        color = _color(commit.operation)
        tip = f"v{commit.version} {commit.operation} {commit.changes}".strip()
        if commit.rebased_over:
            tip += " · " + _race_text(commit)
        parts.append(
            f'<circle cx="{cx}" cy="{axis_y}" r="6" fill="{color}"><title>{esc(tip)}</title>'
            "</circle>"
        )
        parts.append(
            f'<text x="{cx}" y="{axis_y - 12}" text-anchor="middle">v{commit.version}</text>'
        )
        parts.append(
            f'<text x="{cx}" y="{axis_y + 20}" text-anchor="middle" fill="{color}">'
            f"{esc(_short(commit.operation))}</text>"
        )
        if commit.changes:
            parts.append(
                f'<text x="{cx}" y="{axis_y + 33}" text-anchor="middle" fill="#777">'
                f"{esc(commit.changes)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def timeline_text(commits: Sequence[Commit]) -> str:
    """The timeline on one line for terminals.

    >>> timeline_text([Commit(0, "CREATE TABLE", None, 0, 0, 0), Commit(1, "WRITE", 0, 3, 0, 0)])
    'v0 CREATE TABLE → v1 WRITE +3'
    """
    items = []
    for commit in list(commits)[-MAX_TIMELINE:]:
        item = f"v{commit.version} {commit.operation}"
        if commit.changes:
            item += f" {commit.changes}"
        if commit.rebased_over:
            item += f" ({_race_text(commit)})"
        items.append(item)
    return " → ".join(items)


def _race_text(commit: Commit) -> str:
    race = commit.rebased_over
    assert race is not None
    won = f"v{race[0]}" if race[0] == race[1] else f"v{race[0]}–v{race[1]}"
    return f"read v{commit.read_version}; {won} won the race first"


def _short(operation: str) -> str:
    return operation if len(operation) <= 14 else operation[:13] + "…"


def _color(operation: str) -> str:
    for prefix, color in _COLORS.items():
        if operation.upper().startswith(prefix):
            return color
    return "#616161"


class HistoryView:
    """What ``%txsql history t`` displays: the timeline above the history table."""

    def __init__(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        truncated: bool,
        *,
        all_columns: bool = False,
    ) -> None:
        self.table = table
        self.rows = list(rows)
        self.truncated = truncated
        self.commits = commits_from_rows(self.rows)
        # Compact by default: the full parameter and metric maps run off a notebook page.
        self.all_columns = all_columns
        self.columns = HISTORY_COLUMNS if all_columns else HISTORY_SUMMARY_COLUMNS

    def _cells(self) -> list[tuple[Any, ...]]:
        if not self.all_columns:
            return [history_summary(row) for row in self.rows]
        return [tuple(row.get(c.name) for c in HISTORY_COLUMNS) for row in self.rows]

    def _footer(self) -> str:
        n = len(self.rows)
        more = " (older versions not shown)" if self.truncated else ""
        return f"history of {self.table}: {n} version{'s' if n != 1 else ''}{more}"

    def _repr_html_(self) -> str:
        return (
            f'<div class="txsql-history">{timeline_svg(self.commits)}'
            f"{html_table(self.columns, self._cells())}"
            f'<div style="{MUTED};font-size:11px">{esc(self._footer())}</div></div>'
        )

    def __repr__(self) -> str:
        return "\n".join(
            [
                timeline_text(self.commits),
                text_table(self.columns, self._cells()),
                self._footer(),
            ]
        )
