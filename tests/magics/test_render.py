"""Rendering without Spark: values, tables, banners, errors with carets, timelines, cards."""

from __future__ import annotations

import datetime as dt
import decimal
import html
import re
from typing import Any

from txsql.errors import ConcurrentDeleteReadError, SqlParseError
from txsql.magics.conflict import ConflictCard
from txsql.magics.errors import as_cell_error, error_lines
from txsql.magics.history import HistoryView, commits_from_rows, timeline_svg, timeline_text
from txsql.magics.render import Column, CommitDetails, Fetched, html_table, text_table
from txsql.magics.source import SqlSource
from txsql.magics.view import TxResult
from txsql.result import Result

COLUMNS = (Column("id", "bigint"), Column("name", "string"))


def test_html_escapes_and_tells_null_from_the_string_null() -> None:
    html = html_table(COLUMNS, [(1, "<script>&"), (2, None), (3, "null")])
    assert "<script>" not in html and "&lt;script&gt;&amp;" in html
    assert html.count('class="txsql-null"') == 1 and ">null</td>" in html
    assert "id<br>" in html and ">bigint</span>" in html and ">string</span>" in html
    assert "text-align:right" in html  # numbers right-aligned


def test_text_table_values() -> None:
    columns = (*COLUMNS, Column("x", "decimal(4,2)"), Column("at", "timestamp"))
    rows: list[tuple[Any, ...]] = [
        (1, None, decimal.Decimal("1.50"), dt.datetime(2026, 1, 2, 3, 4, 5))
    ]
    rows.append((22, "NULL", None, None))
    text = text_table(columns, rows)
    lines = text.splitlines()
    assert lines[0].startswith("id (bigint) | name (string) | x (decimal(4,2))")
    assert " 1 | NULL " in lines[2] and "2026-01-02 03:04:05" in lines[2]
    assert "'NULL'" in lines[3], "a string 'NULL' must not look like a NULL"


def test_footer_says_more_rows_exist_without_counting() -> None:
    fetched = Fetched(COLUMNS, ((1, "a"), (2, "b")), truncated=True)
    result = Result("SELECT ...", "SELECT", version=4, table="t", df=object())
    view = TxResult([result], fetched=fetched, details=CommitDetails(None, 0), elapsed_ms=1300)
    assert "2 of ≥3 rows · read t@v4 (committed 1970-01-01 00:00:00 UTC) · 1.3 s" in repr(view)
    assert "2 of ≥3 rows" in view._repr_html_()
    assert view.version == 4 and view.operation == "SELECT", "attributes of the last Result"


def test_commit_banner_and_statement_log() -> None:
    create = Result("CREATE TABLE t (id INT)", "CREATE TABLE", version=0, table="t", elapsed_ms=5)
    delete = Result(
        "DELETE FROM t WHERE id = 1",
        "DELETE",
        version=8,
        read_version=7,
        table="t",
        metrics={"num_affected_rows": 2},
        operation_metrics={"numAddedFiles": "0", "numDeletionVectorsAdded": "1"},
        elapsed_ms=140,
    )
    view = TxResult([create, delete], details=CommitDetails("WriteSerializable"), feedback=2)
    text = repr(view)
    assert text.splitlines()[:2] == [
        "1  CREATE TABLE t · ✔ v0 · 5 ms",
        "2  DELETE t · ✔ v8 · 2 rows · 140 ms",
    ]
    assert (
        "✔ committed v8 · DELETE t · read v7 · WriteSerializable · 2 rows affected · 1 DV · "
        "0 files written · 140 ms"
    ) in text
    assert "numDeletionVectorsAdded=1" in text, "feedback 2 adds Delta's operation metrics"
    assert "num_affected_rows (bigint)" in text, "Delta's metric columns as a one-row table"
    html = view._repr_html_()
    assert "✔ committed v8" in html and 'class="txsql-log"' in html
    quiet = TxResult([delete], feedback=0)
    assert "committed" not in repr(quiet) and "num_affected_rows" in repr(quiet)


def test_noop_message_is_not_a_commit() -> None:
    noop = Result(
        "CREATE TABLE IF NOT EXISTS t",
        "CREATE TABLE",
        version=3,
        table="t",
        message="t already exists; nothing done",
    )
    assert repr(TxResult([noop])) == "ℹ t already exists; nothing done"


def test_parse_error_points_at_the_cell_line_with_a_caret() -> None:
    error = SqlParseError("syntax error", statement="SELEC 2", line=2, column=3)
    lines = error_lines(
        error, SqlSource("SELECT 1;\n  SELEC 2"), statements=["SELECT 1", "SELEC 2"]
    )
    assert lines[1:4] == [
        "  at statement 2 of 2, cell line 3, column 3:",
        "  3 |   SELEC 2",
        "    |   ^^^^^",
    ]
    wrapped = as_cell_error(error, lines)
    assert isinstance(wrapped, SqlParseError) and type(wrapped).__name__ == "SqlParseError"
    # _render_traceback_ comes from the cell class as_cell_error makes at run time.
    assert wrapped._render_traceback_() == lines and wrapped.line == 2  # type: ignore[attr-defined]
    from_file = error_lines(error, SqlSource("a\nb", origin="file", name="q.sql"))
    assert "  at q.sql line 2, column 3:" in from_file


def test_history_timeline_marks_races() -> None:
    rows = [
        {"version": 0, "operation": "CREATE TABLE", "readVersion": None, "operationMetrics": {}},
        {
            "version": 1,
            "operation": "WRITE",
            "readVersion": 0,
            "operationMetrics": {"numOutputRows": "3"},
        },
        {
            "version": 2,
            "operation": "DELETE",
            "readVersion": 1,
            "operationMetrics": {"numDeletedRows": "1"},
        },
        {
            "version": 3,
            "operation": "UPDATE",
            "readVersion": 1,
            "operationMetrics": {"numUpdatedRows": "2"},
        },
    ]
    commits = commits_from_rows(rows[::-1])
    assert [c.version for c in commits] == [0, 1, 2, 3]
    text = timeline_text(commits)
    assert text == (
        "v0 CREATE TABLE → v1 WRITE +3 → v2 DELETE −1 → "
        "v3 UPDATE ~2 (read v1; v2 won the race first)"
    )
    svg = timeline_svg(commits)
    assert svg.startswith("<svg") and svg.count("<circle") == 4 and "<path" in svg
    view = HistoryView("t", rows[::-1], truncated=False)
    assert "<svg" in view._repr_html_() and "history of t: 4 versions" in repr(view)


def test_timeline_labels_stay_inside_the_picture() -> None:
    """Each label is centred on its dot; at 10 px sans-serif a character is at most about
    6.5 px wide, so a label of n characters needs n * 3.25 px on each side of its x."""
    operations = ["CREATE TABLE", "WRITE", "MERGE", "CREATE OR REPLACE TABLE AS SELECT"]
    rows = [
        {"version": v, "operation": op, "operationMetrics": {}} for v, op in enumerate(operations)
    ]
    svg = timeline_svg(commits_from_rows(rows))
    width = float(re.search(r'width="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
    labels = re.findall(r'<text x="([0-9.]+)"[^>]*>([^<]*)</text>', svg)
    assert len(labels) == 2 * len(operations)
    for x, label in labels:
        half = len(html.unescape(label)) * 3.25
        assert float(x) - half >= 0 and float(x) + half <= width, (label, x, width)


def test_history_view_is_compact_unless_all_columns() -> None:
    maps = {"operationParameters": {"mode": "Append", "p" * 50: "x" * 400}}
    rows = [
        {"version": 0, "operation": "WRITE", "operationMetrics": {"numOutputRows": "3"}, **maps}
    ]
    compact = HistoryView("t", rows, truncated=False)._repr_html_()
    assert "mode=Append" in compact and "numOutputRows=3" in compact and "x" * 100 not in compact
    full = HistoryView("t", rows, truncated=False, all_columns=True)._repr_html_()
    assert "operationParameters" in full and "x" * 400 in full


def test_conflict_card_names_both_sides_and_the_overlap() -> None:
    error = ConcurrentDeleteReadError(
        "version 5 (DELETE) removed a file this transaction read",
        winning_version=5,
        winning_operation="DELETE",
        isolation_level="WriteSerializable",
        rule="delete vs read",
        partitions=("p=1",),
        files=("/w/t/p=1/part-0.parquet",),
        hint="Retry the UPDATE; it will read v5.",
    )
    # The card shows whatever shape of rows a checker reports, not only path -> positions.
    error.rows = [{"id": 1, "v": "<x>"}]  # type: ignore[assignment]
    card = ConflictCard(
        error, statement="UPDATE t SET v = 1 WHERE id = 1", session="T2", read_version=4
    )
    html = card._repr_html_()
    for fact in (
        "ConcurrentDeleteReadError",
        "session T2, read v4: UPDATE t SET v = 1",
        "committed v5 (DELETE) first",
        "delete vs read",
        "WriteSerializable",
        "p=1",
        "part-0.parquet",
        "&lt;x&gt;",
        "How to avoid:</b> Retry the UPDATE",
    ):
        assert fact in html, fact
    text = repr(card)
    assert "winning transaction: committed v5 (DELETE) first" in text and "id (" not in text
    assert "How to avoid: Retry the UPDATE; it will read v5." in text
