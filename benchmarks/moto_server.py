"""A local S3 (moto's server) for the benchmarks that measure commits on an object store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time


class MotoServer:
    """moto's S3 server in its own process on 127.0.0.1 (so it does not share our GIL)."""

    def __init__(self, log_dir: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        self._log = open(os.path.join(log_dir, "moto-s3.log"), "wb")  # noqa: SIM115
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self.options = {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "access_key_id": "bench",
            "secret_access_key": "bench",
        }
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    raise RuntimeError(f"moto did not start (see {self._log.name})") from None
                time.sleep(0.2)

    def bucket(self, name: str) -> str:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=name)
        return f"s3://{name}"

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)
        self._log.close()
