"""HTML and plain-text rendering of result tables, commit banners and statement logs.

Everything here is a pure function of already-fetched values: rendering never runs a Spark
job. HTML uses inline styles (not a ``<style>`` block) so it survives sanitizers in
JupyterLab, VS Code and nbconvert, and theme variables with fallbacks for dark themes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from txsql.result import Result

MAX_HTML_CELL = 1000
MAX_TEXT_CELL = 40

MUTED = "color:var(--jp-ui-font-color2,#777)"
NULL_STYLE = f"{MUTED};font-style:italic"
TABLE_STYLE = "border-collapse:collapse;font-size:12px;margin:2px 0"
CELL_STYLE = "padding:2px 8px;border-bottom:1px solid var(--jp-border-color2,#e0e0e0)"
OK_STYLE = "color:var(--jp-success-color1,#2e7d32);font-weight:600"
BANNER_STYLE = "font-family:var(--jp-code-font-family,monospace);font-size:12px;margin:2px 0"


@dataclass(frozen=True, slots=True)
class Column:
    """A result column: its name and Spark type (``bigint``, ``string``...)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Fetched:
    """Rows fetched for display with one ``take(limit + 1)`` (or ``collect()`` for all).

    Attributes:
        columns: the result schema.
        rows: at most ``limit`` rows.
        truncated: more rows exist than are shown (the extra fetched row says so).
    """

    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class CommitDetails:
    """What the commit log says about a committed version, beyond the Result."""

    isolation_level: str | None = None
    timestamp_ms: int | None = None


def esc(text: object) -> str:
    """HTML-escape any value's text.

    >>> esc("<b>&")
    '&lt;b&gt;&amp;'
    """
    return html.escape(str(text), quote=True)


# --- cell values ---------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def value_text(value: Any, *, top: bool = True) -> str:
    """A value as text, the way Spark SQL prints it; NULL for SQL NULL.

    The string 'NULL' is quoted at the top level so it cannot pass for a NULL.

    >>> [value_text(v) for v in (None, "null", "NULL", True, 1.5, [1, None])]
    ['NULL', 'null', "'NULL'", 'true', '1.5', '[1, NULL]']
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'" if top and value == "NULL" else value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return repr(value) if not math.isinf(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (bytes, bytearray)):
        shown = bytes(value[:32]).hex()
        return f"0x{shown}" + ("…" if len(value) > 32 else "")
    if hasattr(value, "asDict"):  # a Spark Row, i.e. a struct value
        fields = value.asDict(recursive=False)
        return "{" + ", ".join(f"{k}: {value_text(v, top=False)}" for k, v in fields.items()) + "}"
    if isinstance(value, Mapping):
        items = (
            f"{value_text(k, top=False)} -> {value_text(v, top=False)}" for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v, top=False) for v in value) + "]"
    return str(value)


def value_html(value: Any) -> str:
    """A value as an HTML table cell (``<td>``), NULL styled apart from the text 'null'."""
    if value is None:
        return (
            f'<td style="{CELL_STYLE};{NULL_STYLE}" class="txsql-null" title="SQL NULL">NULL</td>'
        )
    text = value_text(value)
    if isinstance(value, str):
        text = value  # quoting 'NULL' is for plain text; HTML tells NULL apart by style
    if len(text) > MAX_HTML_CELL:
        text = text[:MAX_HTML_CELL] + "…"
    align = ";text-align:right" if is_number(value) else ";text-align:left"
    return f'<td style="{CELL_STYLE}{align};white-space:pre-wrap">{esc(text)}</td>'


# --- tables --------------------------------------------------------------------------


def html_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> str:
    """An escaped HTML table with each column's type under its name."""
    head = "".join(
        f'<th style="{CELL_STYLE};text-align:left">{esc(c.name)}'
        f'<br><span style="{MUTED};font-weight:normal;font-size:11px">{esc(c.type)}</span></th>'
        for c in columns
    )
    body = "".join("<tr>" + "".join(value_html(v) for v in row) + "</tr>" for row in rows)
    return (
        f'<table class="txsql-table" style="{TABLE_STYLE}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def text_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table for terminals; numbers right-aligned, wide cells cut at 40."""
    header = [f"{c.name} ({c.type})" if c.type else c.name for c in columns]
    cells = [[_cut(value_text(v)) for v in row] for row in rows]
    widths = [len(h) for h in header]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("-+-".join("-" * w for w in widths))
    for raw, row in zip(rows, cells):
        lines.append(
            " | ".join(
                c.rjust(w) if is_number(v) else c.ljust(w) for c, w, v in zip(row, widths, raw)
            ).rstrip()
        )
    return "\n".join(lines)


def _cut(text: str) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= MAX_TEXT_CELL else flat[: MAX_TEXT_CELL - 1] + "…"


def rows_footer(fetched: Fetched, read: str | None, elapsed_ms: float | None) -> str:
    """The line under a result table: rows shown, what was read, time.

    >>> rows_footer(Fetched((), ((1,),) * 2, True), "t@v3", 1300)
    '2 of ≥3 rows · read t@v3 · 1.3 s'
    """
    n = len(fetched.rows)
    if fetched.truncated:
        parts = [f"{n} of ≥{n + 1} rows"]
    else:
        parts = [f"{n} row" + ("" if n == 1 else "s")]
    if read:
        parts.append(f"read {read}")
    if elapsed_ms is not None:
        parts.append(duration(elapsed_ms))
    return " · ".join(parts)


def duration(ms: float) -> str:
    """Human-friendly elapsed time.

    >>> duration(140.2), duration(1300), duration(75_000)
    ('140 ms', '1.3 s', '1 min 15 s')
    """
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def commit_time(timestamp_ms: int | None) -> str | None:
    """A commit timestamp as UTC text.

    >>> commit_time(0)
    '1970-01-01 00:00:00 UTC'
    """
    if timestamp_ms is None:
        return None
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


# --- commits ---------------------------------------------------------------------------


def is_commit(result: Result) -> bool:
    """A statement that wrote a version (its Result has no rows but a version)."""
    return result.df is None and result.version is not None and not _is_noop(result)


def _is_noop(result: Result) -> bool:
    # e.g. CREATE TABLE IF NOT EXISTS on an existing table: a message, nothing read or written
    return bool(result.message) and result.read_version is None and not result.metrics


def banner_parts(result: Result, details: CommitDetails | None) -> list[str]:
    """The fields of a one-line commit banner, in order (without the leading ✔).

    >>> r = Result("UPDATE t ...", "UPDATE", version=8, read_version=7, table="t",
    ...            metrics={"num_affected_rows": 2},
    ...            operation_metrics={"numAddedFiles": "1", "numDeletionVectorsAdded": "1"},
    ...            elapsed_ms=140)
    >>> banner_parts(r, CommitDetails("WriteSerializable"))  # doctest: +NORMALIZE_WHITESPACE
    ['committed v8', 'UPDATE t', 'read v7', 'WriteSerializable', '2 rows affected', '1 DV',
     '1 file written', '140 ms']
    """
    target = f" {result.table}" if result.table else ""
    parts = [f"committed v{result.version}", f"{result.operation}{target}"]
    if result.read_version is not None:
        parts.append(f"read v{result.read_version}")
    if details and details.isolation_level:
        parts.append(details.isolation_level)
    rows = _affected_rows(result)
    if rows is not None:
        parts.append(f"{rows} row{'' if rows == 1 else 's'} affected")
    dvs = _metric_sum(result, "numDeletionVectorsAdded", "numDeletionVectorsUpdated")
    if dvs:
        parts.append(f"{dvs} DV" + ("" if dvs == 1 else "s"))
    files = _metric_sum(result, "numFiles", "numAddedFiles", "numTargetFilesAdded")
    if files is not None:
        parts.append(f"{files} file{'' if files == 1 else 's'} written")
    parts.append(duration(result.elapsed_ms))
    return parts


def _affected_rows(result: Result) -> int | None:
    if "num_affected_rows" in result.metrics:
        return int(result.metrics["num_affected_rows"])
    return None


def _metric_sum(result: Result, *names: str) -> int | None:
    values = [result.operation_metrics.get(n) for n in names]
    numbers = [int(v) for v in values if v is not None and str(v).isdigit()]
    return sum(numbers) if numbers else None


def banner_text(result: Result, details: CommitDetails | None) -> str:
    """The commit banner, or an info line for a statement that changed nothing."""
    if is_commit(result):
        text = "✔ " + " · ".join(banner_parts(result, details))
        return text + (f"\nℹ {result.message}" if result.message else "")
    if result.message:
        return f"ℹ {result.message}"
    return f"✔ {result.operation}" + (f" {result.table}" if result.table else "")


def banner_html(result: Result, details: CommitDetails | None) -> str:
    if is_commit(result):
        parts = banner_parts(result, details)
        body = f'<span style="{OK_STYLE}">✔ {esc(parts[0])}</span> · ' + " · ".join(
            esc(p) for p in parts[1:]
        )
        extra = f'<div style="{MUTED}">ℹ {esc(result.message)}</div>' if result.message else ""
        return f'<div class="txsql-banner" style="{BANNER_STYLE}">{body}{extra}</div>'
    return (
        f'<div class="txsql-banner" style="{BANNER_STYLE}">{esc(banner_text(result, None))}</div>'
    )


def metrics_text(result: Result) -> str:
    """Delta's commitInfo operationMetrics as ``key=value`` pairs (feedback level 2)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(result.operation_metrics.items()))


def metrics_table(result: Result) -> tuple[tuple[Column, ...], tuple[tuple[Any, ...], ...]]:
    """The one-row table of Databricks' metric columns (``num_affected_rows``...)."""
    columns = tuple(Column(name, "bigint") for name in result.metrics)
    return columns, (tuple(result.metrics.values()),)


# --- multi-statement log ---------------------------------------------------------------


def log_entry(index: int, result: Result) -> str:
    """One line of the per-statement log of a multi-statement cell.

    >>> log_entry(2, Result("INSERT ...", "WRITE", version=1, read_version=0, table="t",
    ...                     metrics={"num_affected_rows": 3}, elapsed_ms=40))
    '2  WRITE t · ✔ v1 · 3 rows · 40 ms'
    """
    target = f" {result.table}" if result.table else ""
    parts = [f"{index}  {result.operation}{target}"]
    if is_commit(result):
        parts.append(f"✔ v{result.version}")
        rows = _affected_rows(result)
        if rows is not None:
            parts.append(f"{rows} row{'' if rows == 1 else 's'}")
    elif result.df is not None:
        parts.append("rows" if result.version is None else f"read v{result.version}")
    elif result.message:
        parts.append(result.message)
    parts.append(duration(result.elapsed_ms))
    return " · ".join(parts)


def log_html(results: Sequence[Result]) -> str:
    lines = "".join(f"<div>{esc(log_entry(i, r))}</div>" for i, r in enumerate(results, 1))
    return f'<div class="txsql-log" style="{BANNER_STYLE};{MUTED}">{lines}</div>'


def footer_html(text: str) -> str:
    return f'<div class="txsql-footer" style="{MUTED};font-size:11px">{esc(text)}</div>'


def badge_html(text: str) -> str:
    """A session badge: which named session produced this output."""
    style = (
        "display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;"
        "background:var(--jp-brand-color3,#e3f2fd);color:var(--jp-ui-font-color1,#0d47a1)"
    )
    return f'<div class="txsql-badge"><span style="{style}">{esc(text)}</span></div>'


def pre_html(text: str) -> str:
    return f'<pre style="font-size:12px;margin:2px 0">{esc(text)}</pre>'
