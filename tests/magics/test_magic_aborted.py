"""``%%txsql --session``: a failed statement aborts the named transaction until ROLLBACK."""

from __future__ import annotations

from typing import Any

import pytest

from tests.magics import cell, ip, magics_of
from txsql.errors import SchemaError, TransactionAbortedError

pytestmark = pytest.mark.spark
__all__ = ["ip"]


def _rows(shell: Any) -> list[int]:
    from txsql.magics.options import MagicOptions

    table = magics_of(shell)._session(MagicOptions()).table("m")
    return sorted(int(v) for v in table.to_pandas()["id"])


def test_failed_statement_aborts_named_session(ip: Any) -> None:
    cell(ip, "CREATE TABLE m (id INT)")
    cell(ip, "BEGIN;\nINSERT INTO m VALUES (1)", "--session T1")
    with pytest.raises(SchemaError, match="no_such_column"):
        cell(ip, "UPDATE m SET no_such_column = 2", "--session T1")
    badge = magics_of(ip).named.badge("T1")
    assert "aborted" in badge and "ROLLBACK" in badge
    with pytest.raises(TransactionAbortedError, match="statement 2") as refused:
        cell(ip, "INSERT INTO m VALUES (3)", "--session T1")
    assert "ROLLBACK to continue" in str(refused.value)
    with pytest.raises(TransactionAbortedError):
        cell(ip, "COMMIT", "--session T1")
    assert _rows(ip) == [], "nothing of the aborted transaction was written"
    rolled = cell(ip, "ROLLBACK", "--session T1")
    assert "nothing was written" in repr(rolled)
    cell(ip, "BEGIN;\nINSERT INTO m VALUES (4);\nCOMMIT", "--session T1")
    assert _rows(ip) == [4], "ROLLBACK cleared the aborted session"
