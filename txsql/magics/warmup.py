"""Warm txsql's own statement paths in the background, after Spark starts at ``%load_ext``.

A fresh notebook's first INSERT, UPDATE and MERGE each pay 1.5-2.7 s of JIT and codegen
that later ones do not, even after Spark itself is warm. So the background start runs the
quickstart's statement kinds once, on a scratch table in a temporary warehouse that is
removed afterwards: nothing of the user's is read or written, and nothing is left behind.

The warm-up never delays the user: it stops before its next statement once a cell waits,
and the waiting cell cancels the statement in flight (its Spark jobs carry
:data:`WARMUP_TAG`). Failures are only logged: a cancelled or failed warm-up costs the
user nothing but the warmth. ``TXSQL_WARMUP=0`` turns it off.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

logger = logging.getLogger(__name__)

WARMUP_ENV = "TXSQL_WARMUP"
WARMUP_TAG = "txsql-warmup"

SCRATCH_STATEMENTS = (
    "CREATE TABLE warm (id BIGINT, name STRING, v DOUBLE)",
    "INSERT INTO warm VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'c', 3.0), (4, 'd', 4.0)",
    "UPDATE warm SET v = v * 2 WHERE id = 2",
    "DELETE FROM warm WHERE id = 3",
    "MERGE INTO warm t USING (SELECT * FROM VALUES (1, 'a', 5.0), (9, 'z', 9.0) "
    "AS src(id, name, v)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "SELECT * FROM warm",
    "SELECT * FROM warm VERSION AS OF 1",
    "DESCRIBE HISTORY warm",
)


def wants_warmup(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``TXSQL_WARMUP`` is ``0`` (or ``false``, ``no``, ``off``)."""
    env = os.environ if environ is None else environ
    return env.get(WARMUP_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def warm_statements(spark: Any, keep_going: Callable[[], bool]) -> int:
    """Run :data:`SCRATCH_STATEMENTS` on a scratch table; return how many completed.

    Asks ``keep_going()`` before each statement. Runs on the background-start thread, whose
    Spark jobs are tagged :data:`WARMUP_TAG` (job tags are per thread), so
    :func:`cancel_warmup` from the user's thread cancels only these.
    """
    # Imported here, on the background thread: the planner (sqlglot) takes ~1 s to import,
    # which %load_ext must not pay.
    from txsql.session import Session

    done = 0
    views = _temp_views(spark)
    spark.sparkContext.addJobTag(WARMUP_TAG)
    try:
        with tempfile.TemporaryDirectory(prefix="txsql-warmup-") as scratch:
            session = Session(spark, warehouse=scratch)
            for statement in SCRATCH_STATEMENTS:
                if not keep_going():
                    break
                result = session.sql(statement)
                if result.df is not None:
                    result.to_pandas()
                done += 1
    except Exception:
        logger.debug("txsql warm-up stopped after %d statements", done, exc_info=True)
    finally:
        spark.sparkContext.removeJobTag(WARMUP_TAG)
        # A SELECT's lazy result reads through a temp view; the warm-up's results are gone.
        for view in _temp_views(spark) - views:
            spark.catalog.dropTempView(view)
    return done


def _temp_views(spark: Any) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


def cancel_warmup(spark: Any) -> None:
    """Cancel the warm-up's running Spark jobs (called by the first cell that waits)."""
    try:
        spark.sparkContext.cancelJobsWithTag(WARMUP_TAG)
    except Exception:
        logger.debug("cannot cancel the warm-up's jobs", exc_info=True)


__all__ = ["WARMUP_ENV", "WARMUP_TAG", "cancel_warmup", "wants_warmup", "warm_statements"]
