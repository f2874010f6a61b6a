"""Named crash points for the crash-matrix tests (no effect unless asked for).

With ``TXSQL_CRASH_AT=<phase>`` in its environment a process kills itself with SIGKILL when
it reaches that phase, which is exactly what a power cut or ``kill -9`` at that moment
leaves on disk. Phases: ``data_written`` (data files moved and synced), ``dv_written``,
``commit_temp_written`` (complete temp file, not linked yet), ``commit_linked`` (temp not
removed yet; ``dv_`` and ``file_`` variants exist too), ``checkpoint_written``,
``last_checkpoint_written``, ``log_cleanup`` (after the first expired log file is
deleted). The check is one environment lookup, negligible next to the fsyncs around it.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "TXSQL_CRASH_AT"


def crash_point(phase: str) -> None:
    """Die here, like ``kill -9``, if the environment asks for ``phase``."""
    if os.environ.get(CRASH_ENV) == phase:
        os.kill(os.getpid(), signal.SIGKILL)


def file_kind(path: str) -> str:
    """``commit``, ``dv`` or ``file``: how crash points name the file being published."""
    name = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) == "_delta_log" and name.endswith(".json"):
        return "commit"
    if name.startswith("deletion_vector_"):
        return "dv"
    return "file"
