"""Parsing the magic line: flags, values, the statement after them, and errors."""

from __future__ import annotations

import pytest

from txsql.magics.errors import MagicUsageError
from txsql.magics.options import help_text, parse_line


def test_flags_values_and_the_statement_after_them() -> None:
    o = parse_line("--session T1 -o res -l all --retries=3 -q SELECT * FROM t -- x", cell=False)
    assert (o.session, o.out, o.limit, o.retries, o.quiet) == ("T1", "res", "all", 3, True)
    assert o.rest == "SELECT * FROM t -- x"
    quoted = parse_line("-f 'my dir/q.sql' --warehouse \"/tmp/w h\" --explain --render", cell=True)
    assert (quoted.file, quoted.warehouse, quoted.explain, quoted.render) == (
        "my dir/q.sql",
        "/tmp/w h",
        True,
        True,
    )
    assert parse_line("-- SELECT 1", cell=False).rest == "SELECT 1", "-- ends the options"
    assert parse_line("", cell=True).limit is None, "no -l means the configured displaylimit"


def test_sql_after_options_is_never_scanned_for_flags() -> None:
    o = parse_line("-l 0 SELECT '--limit 5', -1 AS x", cell=False)
    assert (o.limit, o.rest) == (0, "SELECT '--limit 5', -1 AS x")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--limt 5", "unknown option --limt; did you mean --limit?"),
        ("-limit 5", "did you mean --limit?"),
        ("--sesion T1", "did you mean --session?"),
        ("--zzzzzz", "unknown option --zzzzzz"),
        ("-l", "option --limit needs a value N"),
        ("-l -3", "--limit takes a whole number >= 0 or 'all'"),
        ("--retries many", "--retries takes a whole number >= 0"),
        ("-o 1x", "--out needs a Python variable name"),
        ("--quiet=yes", "option --quiet takes no value"),
        ("-f 'unclosed", "unclosed quote"),
    ],
)
def test_bad_options_are_errors_with_suggestions(line: str, message: str) -> None:
    with pytest.raises(MagicUsageError) as error:
        parse_line(line, cell=True)
    assert message in error.value.message
    assert "Options: --session NAME" in error.value.hint


def test_cell_magic_line_takes_options_only() -> None:
    with pytest.raises(MagicUsageError, match="takes options only"):
        parse_line("-l 5 SELECT 1", cell=True)


def test_help_lists_every_option() -> None:
    text = help_text()
    for flag in (
        "--session",
        "-o, --out",
        "-l, --limit",
        "--explain",
        "--render",
        "-f, --file",
        "--spark",
        "--warehouse",
        "--retries",
        "-q, --quiet",
    ):
        assert flag in text
