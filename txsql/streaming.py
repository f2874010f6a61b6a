"""Structured Streaming sink helper: ``foreachBatch`` appends that never duplicate a batch.

Spark replays the last batch after a restart when the sink committed it but the query's
checkpoint did not record it yet. The batch id is stable across replays (it comes from the
checkpoint's offset log), so committing each batch with ``txn(app_id, batch_id)`` makes the
replay a no-op: the Flink "pre-commit / commit" protocol with the Delta commit as the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from txsql.planner.idempotent import AppWrite

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from txsql.result import Result

logger = logging.getLogger(__name__)


class Appendable(Protocol):
    """What a batch writer needs of its table (:class:`txsql.Table` is one)."""

    def append(
        self, df: DataFrame, *, app_id: str | None = None, app_version: int | None = None
    ) -> Result: ...


def foreach_batch_writer(table: Appendable, app_id: str) -> Callable[[DataFrame, int], None]:
    """Return ``fn(batch_df, batch_id)`` for ``writeStream.foreachBatch``.

    Args:
        table: The target table.
        app_id: Identifies the query writing this table; keep it across restarts (like the
            checkpoint location). Two queries must not share it.

    Returns:
        A function appending each micro-batch with ``app_version=batch_id``.
    """
    AppWrite.from_args(app_id, 0)  # validate now, not at the first batch

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        result = table.append(batch, app_id=app_id, app_version=int(batch_id))
        if result.version is None:
            logger.info("batch %s of %r: %s", batch_id, app_id, result.message)

    return write_batch
