"""Fault injection for durable-write tests: a fake ``os.write`` and an fsync recorder.

The fake only touches file descriptors whose path (read from ``/proc/self/fd``) matches a
pattern, so a test can fail a checkpoint while the commit before it lands.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

_real_write = os.write
_real_fsync = os.fsync


def fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@dataclass
class WriteFault:
    """Writes to matching files: at most ``chunk`` bytes per call, and after ``budget``
    bytes in total either a short count of 0 (``zero=True``) or ``OSError(err)``."""

    pattern: str
    chunk: int | None = None
    budget: int | None = None
    err: int = errno.ENOSPC
    zero: bool = False
    written: dict[str, int] = field(default_factory=dict)

    def __call__(self, fd: int, data: bytes | memoryview) -> int:
        path = fd_path(fd)
        if not re.search(self.pattern, path):
            return _real_write(fd, data)
        done = self.written.get(path, 0)
        allowed = len(data)
        if self.chunk is not None:
            allowed = min(allowed, self.chunk)
        if self.budget is not None:
            if done >= self.budget:
                if self.zero:
                    return 0
                raise OSError(self.err, os.strerror(self.err))
            allowed = min(allowed, self.budget - done)  # a short write, like a full disk
        n = _real_write(fd, bytes(data[:allowed]))
        self.written[path] = done + n
        return n


def inject_write(monkeypatch: pytest.MonkeyPatch, fault: WriteFault) -> WriteFault:
    monkeypatch.setattr(os, "write", fault)
    return fault


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Patch ``os.fsync`` to record the paths it syncs (and still sync them)."""
    synced: list[str] = []

    def fsync(fd: int) -> None:
        synced.append(fd_path(fd))
        _real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def failing_fsync(pattern: str, err: int = errno.EIO) -> Callable[[int], None]:
    def fsync(fd: int) -> None:
        if re.search(pattern, fd_path(fd)):
            raise OSError(err, os.strerror(err))
        _real_fsync(fd)

    return fsync


def visible_and_hidden(directory: str) -> tuple[list[str], list[str]]:
    """Visible and hidden names in ``directory``; ``.crc`` checksums (best effort) left out."""
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    names = [n for n in names if not n.endswith(".crc")]
    return [n for n in names if not n.startswith(".")], [n for n in names if n.startswith(".")]
