"""The image's HEALTHCHECK (Docker, Compose): probe whatever process runs as PID 1.

Kubernetes ignores HEALTHCHECK and uses the probes in the manifests; this is for `docker run`. The role is
read from PID 1's command line, so one image-wide check fits every command of the entrypoint:
gunicorn answers /healthz, a Celery worker with WORKER_METRICS_PORT answers /healthz there, and any other
process (beat, a one-off command) is healthy while it runs.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.request
from pathlib import Path

TIMEOUT_SECONDS = 3.0


def probe_url(argv: list[str], environ: dict[str, str]) -> str | None:
    """The URL that tells whether the process with this command line is healthy (None: nothing to ask)."""
    words = [Path(arg).name for arg in argv]
    if any(word.startswith("gunicorn") for word in words):
        bind = environ.get("GUNICORN_BIND", "0.0.0.0:8443")
        port = bind.rpartition(":")[2]
        tls = environ.get("GUNICORN_CERTFILE", "/tls/tls.crt") != ""
        return f"{'https' if tls else 'http'}://127.0.0.1:{port}/healthz"
    if "celery" in words and "worker" in argv:
        port = environ.get("WORKER_METRICS_PORT", "0")
        return f"http://127.0.0.1:{port}/healthz" if port not in ("", "0") else None
    return None


def pid1_argv() -> list[str]:
    raw = Path("/proc/1/cmdline").read_bytes()
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def main() -> int:
    url = probe_url(pid1_argv(), dict(os.environ))
    if url is None:
        return 0
    # The serving certificate names the webhook Service, not 127.0.0.1: check liveness, not identity.
    context = ssl._create_unverified_context()  # noqa: S323
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS, context=context) as response:  # noqa: S310
            return 0 if response.status == 200 else 1
    except OSError as error:
        print(f"unhealthy: {url}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
