"""Table locations and the names of files in ``_delta_log``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from txsql.errors import UnsupportedStorageError

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"  # V2 checkpoint sidecar files, under _delta_log

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")


@dataclass(frozen=True, slots=True)
class TableLocation:
    """A table root on the local file system, as an absolute path and a ``file:`` URI."""

    path: str

    @property
    def uri(self) -> str:
        return "file://" + self.path

    @property
    def log_path(self) -> str:
        return os.path.join(self.path, LOG_DIR)


def parse_location(location: str) -> TableLocation:
    """Turn a plain path or ``file:`` URI into a :class:`TableLocation`.

    >>> parse_location("file:///tmp/t").path
    '/tmp/t'
    """
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        raw = unquote(parsed.path) if scheme == "file" else location
        return TableLocation(os.path.abspath(os.path.expanduser(raw)).rstrip("/") or "/")
    raise UnsupportedStorageError(f"storage scheme '{scheme}://' is not supported ({location})")


def commit_name(version: int) -> str:
    """Return the file name of commit ``version``.

    >>> commit_name(12)
    '00000000000000000012.json'
    """
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    """Return the file name of the classic single-file checkpoint at ``version``."""
    return f"{version:020d}.checkpoint.parquet"


@dataclass(frozen=True, slots=True)
class LogFileName:
    """What a ``_delta_log`` file name says about itself."""

    kind: str  # "commit" | "checkpoint" | "multipart" | "v2"
    version: int
    part: int = 1
    parts: int = 1


def classify_log_file(name: str) -> LogFileName | None:
    """Classify a ``_delta_log`` entry; ``None`` for files the reader ignores.

    >>> classify_log_file("00000000000000000001.checkpoint.0000000002.0000000002.parquet")
    LogFileName(kind='multipart', version=1, part=2, parts=2)
    """
    if m := _COMMIT.match(name):
        return LogFileName("commit", int(m.group(1)))
    if m := _CLASSIC_CHECKPOINT.match(name):
        return LogFileName("checkpoint", int(m.group(1)))
    if m := _MULTIPART_CHECKPOINT.match(name):
        return LogFileName("multipart", int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _V2_CHECKPOINT.match(name):
        return LogFileName("v2", int(m.group(1)))
    return None


def data_file_path(root: str, path: str) -> str:
    """Local path of an add/remove ``path`` (relative and URI-encoded, or absolute URI)."""
    parsed = urlparse(path)
    if parsed.scheme:
        return os.path.normpath(unquote(parsed.path))
    return os.path.normpath(os.path.join(root, unquote(path)))
