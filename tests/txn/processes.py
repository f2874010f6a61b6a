"""Child processes for the multi-process tests.

``run_child`` runs ``python -m <module>`` from the repository root (optionally told to kill
itself at a crash point) and accepts only a clean exit or that SIGKILL. ``run_together``
starts spawned processes that all wait on one event, so they really race.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parents[2]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without a crash point, with the repository importable."""
    env = {k: v for k, v in os.environ.items() if k != "TXSQL_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def run_child(
    module: str, *args: str, crash_at: str | None = None, env: dict[str, str] | None = None
) -> int:
    """Run ``python -m module args``; its exit code, which is 0 or -SIGKILL (else fail)."""
    child = child_env(env)
    if crash_at:
        child["TXSQL_CRASH_AT"] = crash_at
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT_DIR,
        env=child,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr
    return done.returncode


def run_together(
    target: Callable[..., None], argument_lists: Iterable[tuple[object, ...]], timeout: float
) -> None:
    """One spawned process per argument tuple, each called as ``target(*args, start)``;
    ``start`` is set once all are running. Every one must exit cleanly within ``timeout``."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=target, args=(*args, start)) for args in argument_lists]
    for p in workers:
        p.start()
    start.set()
    for p in workers:
        p.join(timeout=timeout)
        assert p.exitcode == 0
