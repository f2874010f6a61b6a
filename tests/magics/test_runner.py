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
