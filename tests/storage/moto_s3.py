"""A real S3 API on 127.0.0.1 for tests: moto's server, plus a fake that misbehaves.

``MotoS3`` runs ``moto.server.ThreadedMotoServer`` on a free port and logs its requests
to a file; ``MotoS3Process`` runs the same server as its own process (logging to a file
too). ``MisbehavingS3`` is a small HTTP proxy in front of it that either drops the
``If-None-Match`` header (a store that ignores conditional writes, like some older
S3-compatible servers) or answers every request with S3's wrong-region error.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REGION = "us-east-1"
ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoS3:
    """moto's S3 server on 127.0.0.1, as a thread of this process; ``options(bucket)`` are
    txsql storage_options."""

    def __init__(self, log_file: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log_file = log_file

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self._handler = logging.FileHandler(self._log_file)
        werkzeug = logging.getLogger("werkzeug")
        werkzeug.addHandler(self._handler)
        werkzeug.propagate = False
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        self._server.stop()
        werkzeug = logging.getLogger("werkzeug")
        werkzeug.removeHandler(self._handler)
        werkzeug.propagate = True
        self._handler.close()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        name = f"b-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "endpoint": endpoint or self.endpoint,
            "region": REGION,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "max_retries": "1",
            "retry_timeout": "5",
        }


class MotoS3Process(MotoS3):
    """``python -m moto.server`` as its own process, for clients that hold this process's
    GIL while they wait on a reply (deltalake's query engine does): a server thread here
    would never answer them."""

    def start(self) -> None:
        self._log = self._log_file.open("w")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        while True:  # ready once it accepts a connection (or dead: fail, do not hang)
            assert self._process.poll() is None, self._log_file.read_text()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=0.1)  # a pause that notices a dead server

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)
        self._log.close()

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` variables that point a child process's S3 clients here."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
        }


_WRONG_REGION = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AuthorizationHeaderMalformed</Code>'
    b"<Message>The authorization header is malformed; the region 'us-east-1' is wrong; "
    b"expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>"
)


class MisbehavingS3:
    """A proxy to ``upstream``: ``mode`` is "ignore-if-none-match" or "wrong-region"."""

    def __init__(self, upstream_port: int, mode: str) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                proxy.requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if mode == "wrong-region":
                    self.send_response(400)
                    self.send_header("Content-Length", str(len(_WRONG_REGION)))
                    self.end_headers()
                    self.wfile.write(_WRONG_REGION)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "if-none-match"}
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=10)
                conn.request(self.command, self.path, body=body, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.requests: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> MisbehavingS3:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
