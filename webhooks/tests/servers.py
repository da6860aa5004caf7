"""Gunicorn serving the webhook listener over TLS, as its Deployment does (end-to-end tests, benchmark)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Served:
    port: int
    ca_file: Path
    log_file: Path

    def ssl_context(self) -> ssl.SSLContext:
        """A client context trusting only our CA (host names are checked against the certificate)."""
        return ssl.create_default_context(cafile=str(self.ca_file))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def gunicorn_tls(
    cert_dir: Path,
    *,
    env: dict[str, str],
    workers: int = 2,
    threads: int = 4,
    log_file: Path | None = None,
) -> Iterator[Served]:
    """`gunicorn argoml_site.webhook_wsgi` on a free loopback port with `cert_dir`'s TLS files, until exit.

    gthread workers keep connections alive, as the apiserver's client does; `env` is the process's whole
    configuration (SECRET_KEY, DATABASE_URL, REDIS_URL, ALLOWED_HOSTS, ...) on top of ours.
    """
    port = free_port()
    log_file = log_file or cert_dir / "gunicorn.log"
    argv = [
        sys.executable, "-m", "gunicorn", "argoml_site.webhook_wsgi:application",
        "--bind", f"127.0.0.1:{port}",
        "--certfile", str(cert_dir / "tls.crt"), "--keyfile", str(cert_dir / "tls.key"),
        "--workers", str(workers), "--worker-class", "gthread", "--threads", str(threads),
        "--keep-alive", "30", "--backlog", "256",
        "--error-logfile", str(log_file), "--log-level", "warning",
    ]  # fmt: skip
    with open(log_file, "ab") as log:
        process = subprocess.Popen(
            argv, cwd=REPO, env={**os.environ, **env}, stdout=log, stderr=log, start_new_session=True
        )
    served = Served(port, cert_dir / "ca.crt", log_file)
    try:
        _wait_until_serving(served, process)
        yield served
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_until_serving(served: Served, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{served.log_file.read_text()}")
        try:
            connection = http.client.HTTPSConnection(
                "127.0.0.1", served.port, context=served.ssl_context(), timeout=2
            )
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"gunicorn did not answer /healthz within {STARTUP_TIMEOUT_SECONDS} s")
