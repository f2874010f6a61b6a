"""Session-scoped moto S3 server on 127.0.0.1 (log in the session's temp dir)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.storage.moto_s3 import MotoS3


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    server = MotoS3(tmp_path_factory.mktemp("moto") / "moto-s3.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture()
def s3_bucket(moto_s3: MotoS3) -> str:
    """A fresh, empty bucket (name only)."""
    return moto_s3.new_bucket()
