"""The magics end to end in an in-process IPython shell on the shared local SparkSession."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.magics import cell, ip, magics_of
from txsql.errors import ConcurrentDeleteReadError, SqlError, SqlParseError
from txsql.magics.completion import candidates
from txsql.magics.errors import MagicUsageError
from txsql.magics.view import TextView, TxResult

pytestmark = pytest.mark.spark
__all__ = ["ip"]


def _version(shell: Any, table: str) -> int:
    return int(magics_of(shell)._session(_no_options()).table(table).version())


def _no_options() -> Any:
    from txsql.magics.options import MagicOptions

    return MagicOptions()


def test_write_then_read_with_banner_limit_escaping_and_nulls(ip: Any) -> None:
    created = cell(ip, "CREATE TABLE t (id BIGINT, name STRING)")
    assert repr(created).startswith("✔ committed v0 · CREATE TABLE t · WriteSerializable")
    inserted = cell(ip, "INSERT INTO t VALUES (1, '<b>x</b>'), (2, NULL), (3, 'null'), (4, 'd')")
    banner = repr(inserted).splitlines()[0]
    assert banner.startswith(
        "✔ committed v1 · WRITE t · read v0 · WriteSerializable · 4 rows affected · "
    )
    assert "file" in banner and banner.endswith(("ms", " s"))
    assert "num_inserted_rows" in inserted._repr_html_()
    assert ip.user_ns["_txsql"] is inserted

    shown = cell(ip, "SELECT * FROM t ORDER BY id", line="-l 2 -o first")
    assert ip.user_ns["first"] is shown and ip.user_ns["_txsql"] is shown
    html = shown._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert html.count('class="txsql-null"') == 1 and ">bigint</span>" in html
    assert "2 of ≥3 rows · read t@v1 (committed " in repr(shown)
    assert isinstance(shown.fetched.rows, tuple) and len(shown.fetched.rows) == 2

    ip.run_line_magic("config", "TxSql.displaylimit = 1")
    assert "1 of ≥2 rows" in repr(ip.run_line_magic("txsql", "SELECT * FROM t ORDER BY id"))
    every = ip.run_line_magic("txsql", "-l all SELECT * FROM t ORDER BY id")
    assert "4 rows · read t@v1" in repr(every) and "| 'null'" not in repr(every)
    assert "3 | null" in repr(every) and "2 | NULL" in repr(every)
    assert ip.run_line_magic("txsql", "-l 0 -o kept SELECT * FROM t") is None
    assert ip.user_ns["kept"].fetched is None, "no display, no Spark job"

    catalog = magics_of(ip)._session(_no_options()).catalog
    assert candidates("%%txsql\nSELECT * FROM ", "", catalog) == ["t"]
    assert candidates("SELECT na", "SELECT na FROM t", catalog) == ["id", "name"]


def test_script_log_output_modes_and_quiet(ip: Any) -> None:
    script = cell(
        ip,
        "CREATE TABLE s (id INT);\nINSERT INTO s VALUES (1), (2);\nSELECT count(*) AS n FROM s",
    )
    lines = repr(script).splitlines()
    assert lines[0].startswith("1  CREATE TABLE s · ✔ v0 · ")
    assert lines[1].startswith("2  WRITE s · ✔ v1 · 2 rows · ")
    assert lines[2].startswith("3  SELECT s · read v1 · ")
    assert "n (int)" in lines[3] or "n (bigint)" in lines[3]
    assert [r.operation for r in script.results] == ["CREATE TABLE", "WRITE", "SELECT"]

    ip.run_line_magic("config", "TxSql.output = 'spark'")
    frame = ip.run_line_magic("txsql", "SELECT id FROM s")
    assert type(frame).__name__ == "DataFrame" and frame.columns == ["id"]
    assert isinstance(ip.user_ns["_txsql"], TxResult), "_txsql holds the rich result anyway"
    ip.run_line_magic("config", "TxSql.output = 'pandas'")
    pdf = ip.run_line_magic("txsql", "-o p SELECT id FROM s ORDER BY id")
    assert isinstance(pdf, pd.DataFrame) and pdf["id"].tolist() == [1, 2]
    assert ip.user_ns["p"] is pdf
    ip.run_line_magic("config", "TxSql.output = 'result'")
    quiet = ip.run_line_magic("txsql", "-q INSERT INTO s VALUES (3)")
    assert "committed" not in repr(quiet) and "num_affected_rows" in repr(quiet)


def test_parameters_are_typed_literals_from_the_notebook(ip: Any) -> None:
    ip.user_ns.update(
        lo=2, who="o'neil -- not a comment", day=dt.date(2026, 1, 31), ids=[1, 3], none=None
    )
    cell(ip, "CREATE TABLE p (id INT, name STRING, d DATE, n STRING)")
    cell(
        ip,
        "INSERT INTO p VALUES (1, 'a', NULL, NULL), (:lo, :who, :day, :none), (3, 'c', NULL, NULL)",
    )
    rendered = cell(
        ip, "SELECT ':lo' AS s, id::STRING AS t FROM p WHERE id IN (:ids) -- :zz", "--render"
    )
    assert isinstance(rendered, TextView)
    assert "WHERE\n  id IN (1, 3)" in rendered.text and "':lo' AS s" in rendered.text
    assert (
        "--   :ids = [1, 3] (list)" in rendered.text and ":zz" not in rendered.text.split("--")[0]
    )
    rows = cell(
        ip, "SELECT id, name, d, ':lo' AS s FROM p WHERE id = :lo OR id IN (:ids) ORDER BY id"
    )
    assert rows.fetched.rows == (
        (1, "a", None, ":lo"),
        (2, "o'neil -- not a comment", dt.date(2026, 1, 31), ":lo"),
        (3, "c", None, ":lo"),
    )
    with pytest.raises(SqlError) as missing:
        cell(ip, "SELECT :lo, :nope;\nSELECT :absent FROM p WHERE id = :nope")
    assert "parameter(s) :nope, :absent" in missing.value.message
    assert missing.value.line == 1
    assert _version(ip, "p") == 1, "a missing parameter runs nothing"


def test_notebook_dataframes_are_tables(ip: Any, spark: Any) -> None:
    ip.user_ns["new_rows"] = pd.DataFrame({"id": [10, 11], "tag": ["x", "y"]})
    ip.user_ns["labels"] = spark.createDataFrame(
        [(10, "ten"), (11, "eleven")], "id INT, label STRING"
    )
    cell(ip, "CREATE TABLE d (id BIGINT, tag STRING);\nINSERT INTO d SELECT * FROM new_rows")
    joined = cell(ip, "SELECT d.id, label FROM d JOIN labels USING (id) ORDER BY d.id")
    assert joined.fetched.rows == ((10, "ten"), (11, "eleven"))
    ip.user_ns["d"] = pd.DataFrame({"id": [99]})
    again = cell(ip, "SELECT count(*) AS n FROM d")
    assert again.fetched.rows == ((2,),), "a txsql table wins over a variable of the same name"


def test_errors_stop_the_cell_without_a_traceback(ip: Any, capsys: Any) -> None:
    cell(ip, "CREATE TABLE e (id BIGINT NOT NULL)")
    outcome = ip.run_cell("%%txsql\nINSERT INTO e VALUES (1);\n  SELEC 1")
    assert isinstance(outcome.error_in_exec, SqlParseError)
    out = capsys.readouterr().out
    assert "Traceback" not in out and "statement 2 of 2, cell line 3, column" in out
    assert "  3 |   SELEC 1" in out and "\n    |   ^^^^^\n" in out, "the caret underlines SELEC"
    assert "`SELEC` does not start a SQL statement; did you mean SELECT?" in out
    assert "sqlglot" not in out and "Required keyword" not in out
    assert _version(ip, "e") == 0, "a syntax error anywhere runs nothing"

    outcome = ip.run_cell("%%txsql\nINSERT INTO e VALUES (1);\nINSERT INTO nope VALUES (1)")
    out = capsys.readouterr().out
    assert "TableNotFoundError" in out and "statement 2 of 2, cell line 3, column 1" in out
    assert "Statements 1-1 ran before it; any commits they made stand." in out
    assert _version(ip, "e") == 1

    outcome = ip.run_cell("%%txsql\nSELECT no_such_column FROM e")
    out = capsys.readouterr()
    assert "UNRESOLVED_COLUMN" in out.out and "Traceback" not in out.out
    assert "cell line 2, column 8:" in out.out, "Spark's position of the column, not column 1"
    assert "pos 7" not in out.out, "Spark's offset into txsql's rewritten SQL is not shown"
    assert "SQLQueryContextLogger" not in out.err, "PySpark's JSON error dump is silenced"

    ip.run_cell("%%txsql\nINSERT INTO e VALUES (NULL)")
    out = capsys.readouterr().out
    assert "NOT NULL" in out and "the table is unchanged" in out
    assert _version(ip, "e") == 1

    ip.run_cell("%%txsql --limt 3\nSELECT 1")
    out = capsys.readouterr().out
    assert "MagicUsageError" in out and "did you mean --limit?" in out and "Traceback" not in out
    ip.run_cell("%%txsql\nSELECT :a, :b")
    assert "no notebook variable for parameter(s) :a, :b" in capsys.readouterr().out

    magics_of(ip).short_errors = False
    ip.run_cell("%%txsql\nSELEC 1")
    assert "Traceback" in capsys.readouterr().out


def test_conflict_card_is_shown_and_the_cell_fails(
    ip: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txsql.session import Session

    def lose(self: Any, text: str, params: Any = None) -> Any:
        error = ConcurrentDeleteReadError(
            "version 3 (DELETE) removed rows this UPDATE read",
            winning_version=3,
            winning_operation="DELETE",
            isolation_level="Serializable",
            rule="delete vs read",
            files=("/w/t/part-1.parquet",),
        )
        error.locate(text, 1, 1)
        raise error

    monkeypatch.setattr(Session, "run_script", lose)
    outcome = ip.run_cell("%%txsql\nSELECT 1")
    assert isinstance(outcome.error_in_exec, ConcurrentDeleteReadError)
    out = capsys.readouterr().out
    assert "✘ commit conflict: ConcurrentDeleteReadError" in out
    assert "winning transaction: committed v3 (DELETE) first" in out
    assert "(see the conflict card above)" in out and "Traceback" not in out


def test_history_diff_and_describe_history(ip: Any) -> None:
    cell(ip, "CREATE TABLE h (id INT, v STRING)")
    cell(ip, "INSERT INTO h VALUES (1, 'a'), (2, 'b')")
    cell(ip, "INSERT INTO h VALUES (3, 'c')")
    history = ip.run_line_magic("txsql", "history h")
    assert repr(history).startswith("v0 CREATE TABLE → v1 WRITE +2 → v2 WRITE +1")
    assert "<svg" in history._repr_html_() and "history of h: 3 versions" in repr(history)
    assert "(older versions not shown)" in repr(ip.run_line_magic("txsql", "-l 2 history h"))

    diff = ip.run_line_magic("txsql", "diff h")
    assert (diff.old, diff.new, diff.added, diff.removed) == (1, 2, [(3, "c")], [])
    back = ip.run_line_magic("txsql", "diff h 2 0")
    assert sorted(back.removed) == [(1, "a"), (2, "b"), (3, "c")] and back.added == []
    assert (
        "h: v2 → v0 · 0 added, 0 updated, 3 removed" in repr(back)
        and "−</td>" in back._repr_html_()
    )

    described = cell(ip, "DESCRIBE HISTORY h")
    assert "<svg" in described._repr_html_() and "v1 WRITE +2" in repr(described)


def test_explain_file_spark_variable_and_subcommands(ip: Any, tmp_path: Path) -> None:
    cell(ip, "CREATE TABLE x (id INT)")
    plan = cell(ip, "SELECT * FROM x WHERE id > 1", "--explain")
    assert isinstance(plan, TextView) and "Physical Plan" in plan.text
    dml = cell(ip, "DELETE FROM x WHERE id = 3", "--explain")
    assert isinstance(dml, TextView) and "partition filter" in dml.text and "files" in dml.text
    assert _version(ip, "x") == 0, "explaining runs nothing"

    script = tmp_path / "q.sql"
    script.write_text("INSERT INTO x VALUES (5);\nSELECT * FROM x")
    assert ip.run_line_magic("txsql", f"-f {script}").fetched.rows == ((5,),)
    script.write_text("SELECT 1;\nSELEC 2")
    with pytest.raises(SqlParseError) as error:
        ip.run_line_magic("txsql", f"-f {script}")
    assert "q.sql line 2" in "\n".join(error.value._render_traceback_())  # type: ignore[attr-defined]

    assert ip.run_line_magic("txsql", "--spark spark SELECT 7 AS n").fetched.rows == ((7,),)
    with pytest.raises(MagicUsageError, match="no notebook variable 'sc' for --spark"):
        ip.run_line_magic("txsql", "--spark sc SELECT 1")
    other = tmp_path / "other"
    cell(ip, "CREATE TABLE y (id INT)", f"--warehouse {other}")
    assert (other / "y" / "_delta_log").is_dir()
    assert repr(ip.run_line_magic("txsql", "tables")) == "x"
    status = repr(ip.run_line_magic("txsql", ""))
    assert "tables: x" in status and "displaylimit=20" in status
    assert "--session NAME" in repr(ip.run_line_magic("txsql", "--help"))


def test_named_sessions(ip: Any) -> None:
    cell(ip, "CREATE TABLE n (id INT)")
    assert repr(ip.run_line_magic("txsql", "sessions")) == "no open sessions"
    began = cell(ip, "BEGIN;\nINSERT INTO n VALUES (1)", "--session T1")
    assert began.badge.startswith("T1 · ")
    assert "T1" in repr(ip.run_line_magic("txsql", "sessions"))
    assert _version(ip, "n") == 0, "staged, not committed"
    committed = cell(ip, "COMMIT", "--session T1")
    assert committed.version == 1 and _version(ip, "n") == 1
    with pytest.raises(MagicUsageError, match="has no open transaction"):
        cell(ip, "INSERT INTO n VALUES (2)", "--session T1")
