"""Gunicorn's configuration for the web process (admin, dashboard, API and admission webhooks over TLS).

Every knob is an environment variable, so the Deployment changes behaviour without a new image;
docs/install.md ("Gunicorn") lists them with their defaults.

The TLS files are read per connection by the gthread worker, so a renewed Secret (mounted as a directory,
not with subPath) is served without a restart. With PROMETHEUS_MULTIPROC_DIR set, the hooks below keep the
multiprocess samples honest: stale files are removed at start and a dead worker's live gauges dropped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# The project root, wherever gunicorn was started from: the settings readers and the app live there.
APP_ROOT = Path(__file__).resolve().parent.parent
if str(APP_ROOT) not in sys.path:
    sys.path.insert(0, str(APP_ROOT))

from django.core.exceptions import ImproperlyConfigured  # noqa: E402

from argoml_site.env import env_bool, env_int, env_str  # noqa: E402

DEFAULT_CERTFILE = "/tls/tls.crt"
DEFAULT_KEYFILE = "/tls/tls.key"


def tls_files(certfile: str, keyfile: str) -> tuple[str | None, str | None]:
    """Both files (TLS) or neither (plain HTTP); a half-configured or missing pair stops the start-up."""
    if not certfile and not keyfile:
        return None, None
    if not certfile or not keyfile:
        raise ImproperlyConfigured(
            "Set both GUNICORN_CERTFILE and GUNICORN_KEYFILE, or neither for plain HTTP."
        )
    for variable, path in (("GUNICORN_CERTFILE", certfile), ("GUNICORN_KEYFILE", keyfile)):
        if not Path(path).is_file():
            raise ImproperlyConfigured(
                f"{variable}={path!r} does not exist; mount the webhook TLS Secret there (docs/install.md)."
            )
    return certfile, keyfile


def remove_stale_samples(directory: str) -> int:
    """Delete the sample files of processes from a previous start; returns how many."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    removed = 0
    for stale in path.glob("*.db"):
        stale.unlink(missing_ok=True)
        removed += 1
    return removed


# -- settings gunicorn reads --------------------------------------------------------------------------
# Django plus its collected static files (deploy/wsgi.py).
wsgi_app = "deploy.wsgi:application"
chdir = str(APP_ROOT)
bind = [env_str("GUNICORN_BIND", "0.0.0.0:8443")]
certfile, keyfile = tls_files(
    env_str("GUNICORN_CERTFILE", DEFAULT_CERTFILE), env_str("GUNICORN_KEYFILE", DEFAULT_KEYFILE)
)
worker_class = "gthread"
workers = env_int("GUNICORN_WORKERS", 2, minimum=1)
threads = env_int("GUNICORN_THREADS", 1, minimum=1)
timeout = env_int("GUNICORN_TIMEOUT", 60, minimum=1)
# Below the Pod's terminationGracePeriodSeconds (30), so in-flight requests finish before SIGKILL.
graceful_timeout = env_int("GUNICORN_GRACEFUL_TIMEOUT", 25, minimum=1)
keepalive = env_int("GUNICORN_KEEPALIVE", 30, minimum=0)
max_requests = env_int("GUNICORN_MAX_REQUESTS", 0, minimum=0)
max_requests_jitter = env_int("GUNICORN_MAX_REQUESTS_JITTER", 0, minimum=0)
worker_tmp_dir = env_str("GUNICORN_WORKER_TMP_DIR") or None
forwarded_allow_ips = env_str("FORWARDED_ALLOW_IPS", "127.0.0.1")
accesslog = "-" if env_bool("GUNICORN_ACCESS_LOG", default=False) else None
errorlog = "-"
loglevel = env_str("LOG_LEVEL", "info").lower()
proc_name = "argoml-web"


# -- hooks ----------------------------------------------------------------------------------------------
def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        removed = remove_stale_samples(directory)
        server.log.info("metrics: %d stale sample file(s) removed from %s", removed, directory)


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
