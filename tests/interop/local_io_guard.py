"""Refuse (and record) local file access under one directory unless txsql.storage does it.

Installed in a client process, it proves the process reaches a table only through the
store interface: every Python-level way to touch a local file (``open``, the ``os``
functions pathlib / shutil / glob use underneath, pyarrow's Parquet readers) is wrapped;
a call on a path under the guarded directory is allowed when a frame of ``txsql.storage``
is on the stack, or when the txsql function making it is one of ``allowed_sites``
(recorded in ``site_accesses``); otherwise it is recorded and fails with EACCES.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

# os functions whose first argument is a path (or a file descriptor, which is not checked).
_OS_FUNCTIONS = (
    "open", "stat", "lstat", "listdir", "scandir", "mkdir", "rmdir", "unlink", "remove",
    "link", "rename", "replace", "utime", "truncate", "chmod", "symlink", "readlink",
)  # fmt: skip
# Functions with a second path argument (the target) that must be checked too.
_TWO_PATHS = frozenset({"link", "rename", "replace", "symlink"})


@dataclass
class LocalIoGuard:
    root: str
    allowed_sites: frozenset[str] = frozenset()  # "txsql.module:function" or "txsql.module"
    violations: list[str] = field(default_factory=list)
    allowed: int = 0  # accesses under root made by txsql.storage (proves the guard is live)
    site_accesses: set[str] = field(default_factory=set)  # allowed_sites that were used

    def covers(self, path: Any) -> bool:
        if isinstance(path, int) or path is None:
            return False
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return False
        if text.startswith("file://"):
            text = text[len("file://") :]
        full = os.path.abspath(text)
        return full == self.root or full.startswith(self.root + os.sep)

    def check(self, name: str, paths: tuple[Any, ...]) -> None:
        if not any(self.covers(p) for p in paths):
            return
        if _storage_on_stack():
            self.allowed += 1
            return
        caller = _first_txsql_frame()
        site = caller.rsplit(":", 1)[0]
        if site in self.allowed_sites or site.split(":")[0] in self.allowed_sites:
            self.site_accesses.add(site)
            return
        self.violations.append(f"{name}({', '.join(map(str, paths))}) from {caller}")
        raise PermissionError(errno.EACCES, f"local access outside txsql.storage: {name}")


def _frames() -> list[Any]:
    frame: FrameType | None = sys._getframe(2)
    out = []
    while frame is not None:
        out.append(frame)
        frame = frame.f_back
    return out


def _storage_on_stack() -> bool:
    return any(str(f.f_globals.get("__name__", "")).startswith("txsql.storage") for f in _frames())


def _first_txsql_frame() -> str:
    for f in _frames():
        module = str(f.f_globals.get("__name__", ""))
        if module.startswith("txsql."):
            return f"{module}:{f.f_code.co_name}:{f.f_lineno}"
    return "?"


def install(root: str, allowed_sites: frozenset[str] = frozenset()) -> LocalIoGuard:
    """Wrap the file functions of this process for ``root``; returns the recording guard."""
    guard = LocalIoGuard(os.path.abspath(root), allowed_sites)

    def wrap(name: str, original: Callable[..., Any], two: bool) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            paths = args[:2] if two else args[:1]
            guard.check(name, paths)
            return original(*args, **kwargs)

        return guarded

    for name in _OS_FUNCTIONS:
        setattr(os, name, wrap(name, getattr(os, name), name in _TWO_PATHS))
    builtins.open = io.open = wrap("open", builtins.open, False)
    import pyarrow.parquet as pq

    # pyarrow opens files in C++, out of sight of os: guard its entry points by name.
    pq.read_metadata = wrap("pq.read_metadata", pq.read_metadata, False)
    pq.ParquetFile = _guarded_class(pq.ParquetFile, guard)
    pq.read_table = wrap("pq.read_table", pq.read_table, False)
    return guard


def _guarded_class(cls: type, guard: LocalIoGuard) -> type:
    class Guarded(cls):
        def __init__(self, source: Any, *args: Any, **kwargs: Any) -> None:
            guard.check("pq.ParquetFile", (source,))
            super().__init__(source, *args, **kwargs)

    return Guarded
