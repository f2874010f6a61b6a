"""A Spark standalone cluster on 127.0.0.1 for the cluster tests: one master and two workers,
each a separate JVM started with pyspark's ``bin/spark-class``, logging to files.

The workers' Python is "a cluster without txsql": their environment puts a
``sitecustomize`` first on ``PYTHONPATH`` that hides every txsql installed in
site-packages (the venv's editable install included). So txsql is importable on an
executor only if the job ships it (``spark.submit.pyFiles``), exactly as on a real
cluster where it was never installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

# Runs at the start of every Python process an executor starts (via PYTHONPATH).
HIDE_TXSQL = '''
import site
import sys
from importlib.machinery import PathFinder

_SITE = tuple(site.getsitepackages())


def _outside_site(entry):
    return not any(entry.startswith(p) for p in _SITE)


class _TxsqlOnlyIfShipped:
    """Finds top-level txsql only outside site-packages (a shipped zip or PYTHONPATH)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "txsql":
            return None
        spec = PathFinder.find_spec(name, [p for p in sys.path if _outside_site(p)])
        if spec is None:
            raise ModuleNotFoundError("No module named 'txsql'", name="txsql")
        return spec


# Editable installs add a finder of their own; a cluster without txsql has none.
sys.meta_path[:] = [f for f in sys.meta_path if "txsql" not in repr(f)]
sys.meta_path.insert(0, _TxsqlOnlyIfShipped())
'''


# Every JVM here lives for seconds on tiny data: the C1 compiler alone and the serial
# collector halve their CPU time (measured: 35 -> 17 s of user time for test_cluster.py).
JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@dataclass(frozen=True)
class Cluster:
    master_url: str
    log_dir: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_env(python_dir: Path) -> dict[str, str]:
    import pyspark

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=os.path.dirname(pyspark.__file__),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=JAVA_OPTS,
        PYSPARK_PYTHON=sys.executable,
        # Only the txsql-hiding sitecustomize: never the repository the tests run from.
        PYTHONPATH=str(python_dir),
    )
    return env


@contextmanager
def standalone_cluster(workdir: Path, workers: int = 2, timeout: float = 120) -> Iterator[Cluster]:
    """Start a master and ``workers`` one-core workers; stop and reap them all on exit."""
    import pyspark

    python_dir = workdir / "cluster-python"
    python_dir.mkdir()
    (python_dir / "sitecustomize.py").write_text(HIDE_TXSQL)
    env = _cluster_env(python_dir)
    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master",
         "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
    ]  # fmt: skip
    for i in range(workers):
        work = workdir / f"worker{i}"
        work.mkdir()
        commands.append(
            [spark_class, "org.apache.spark.deploy.worker.Worker",
             "--host", "127.0.0.1", "--webui-port", str(free_port()),
             "--cores", "1", "--memory", "1g", "--work-dir", str(work), master_url]
        )  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for i, command in enumerate(commands):
            name = "master" if i == 0 else f"worker{i - 1}"
            with open(workdir / f"{name}.log", "wb") as log:
                processes.append(
                    subprocess.Popen(
                        command,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        cwd=workdir,
                        start_new_session=True,  # its own group: teardown kills its children
                    )
                )
            if i == 0:  # workers register with a running master, so start it first
                _wait_for_port(port, processes[0], workdir, timeout)
        _wait_for_workers(ui_port, workers, processes, workdir, timeout)
        yield Cluster(master_url, workdir)
    finally:
        for process in reversed(processes):
            _stop(process)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], logs: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Spark master exited early; see {logs}/master.log")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the Spark master did not listen within {timeout}s; see {logs}")


def _wait_for_workers(
    ui_port: int, workers: int, processes: list[subprocess.Popen[bytes]], logs: Path, timeout: float
) -> None:
    """Poll the master's JSON status page until every worker is registered and alive."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes):
            raise RuntimeError(f"a Spark master or worker exited early; see {logs}/*.log")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
                status = json.load(r)
            if sum(w.get("state") == "ALIVE" for w in status.get("workers", [])) >= workers:
                return
        except OSError:
            pass  # the web UI starts a moment after the RPC port
        time.sleep(0.3)
    raise RuntimeError(f"{workers} Spark workers did not register within {timeout}s; see {logs}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (the JVM and any executor it launched), then reap it."""
    if process.poll() is None:
        with suppress(ProcessLookupError):  # it exited between poll() and here
            os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
