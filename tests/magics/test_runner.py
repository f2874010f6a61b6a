"""A cell whose rows fail while they are fetched raises the typed error at the cell line."""

from __future__ import annotations

from typing import Any

import pytest

from tests.magics import cell, ip
from txsql.errors import DivisionByZeroError, InvalidCastError, ParameterTypeError

pytestmark = pytest.mark.spark
__all__ = ["ip"]


def test_fetch_errors_in_a_cell_are_typed_at_their_line(ip: Any) -> None:
    cell(ip, "CREATE TABLE h (id BIGINT, n INT);\nINSERT INTO h VALUES (1, 0)")
    with pytest.raises(InvalidCastError) as cast:
        cell(ip, "SELECT *\nFROM h\nWHERE id = 'abc'")
    assert (cast.value.line, cast.value.column) == (3, 7)
    with pytest.raises(DivisionByZeroError) as divided:
        cell(ip, "INSERT INTO h VALUES (2, 2);\nSELECT id / n FROM h")
    assert (divided.value.line, divided.value.column) == (2, 8)
    rendered = "\n".join(divided.value._render_traceback_())  # type: ignore[attr-defined]
    assert "DivisionByZeroError" in rendered and "try_divide" in rendered
    ip.user_ns["k"] = "abc"
    with pytest.raises(ParameterTypeError) as param:
        cell(ip, "SELECT * FROM h WHERE id = :k")
    assert param.value.parameter == "k" and param.value.column == 28


def test_struct_fields_and_quoted_names_in_a_cell(ip: Any) -> None:
    """The SQL the API accepts runs in %%txsql too: struct-field SET targets, a backtick in
    a table and a column name, a dotted MERGE SET target; DuckDB reads the result."""
    from tests.interop.readers import duckdb_rows
    from tests.magics import magics_of
    from txsql.magics.options import MagicOptions

    cell(
        ip,
        "CREATE TABLE `t``x` (id INT, s STRUCT<a: INT, b: STRING>, `dot.col` INT);\n"
        "INSERT INTO `t``x` VALUES (1, named_struct('a', 1, 'b', 'x'), 1), (2, NULL, 2);\n"
        "UPDATE `t``x` SET s.a = s.a + 10, `dot.col` = 0 WHERE id = 1;\n"
        "MERGE INTO `t``x` AS q USING (SELECT 2 AS k) src ON q.id = src.k\n"
        "  WHEN MATCHED THEN UPDATE SET q.s.b = 'y', q.`dot.col` = 20;\n"
        "CREATE TABLE b (id INT, `back``tick` INT);\n"
        "INSERT INTO b VALUES (1, 1);\n"
        "UPDATE b SET `back``tick` = `back``tick` + 1",
    )
    session = magics_of(ip)._session(MagicOptions())
    handle = session.table("`t``x`")
    assert duckdb_rows(handle.location, handle.version(), 'id, s, "dot.col"') == [
        (1, {"a": 11, "b": "x"}, 0),
        (2, {"a": None, "b": "y"}, 20),
    ]
    other = session.table("b")
    assert duckdb_rows(other.location, other.version(), 'id, "back`tick"') == [(1, 2)]
