"""Prometheus exposition for every process kind.

Gunicorn workers and Celery pool processes are separate processes; with PROMETHEUS_MULTIPROC_DIR set
(as `make run` and the deployment do) each writes its samples there and any process can serve the sum.
Workers serve them on WORKER_METRICS_PORT; the web process on /metrics. Both ask for the bearer token of
METRICS_TOKEN (the web process also lets staff sessions in): metric labels name namespaces and tasks.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import REGISTRY, CollectorRegistry, Counter, make_wsgi_app, multiprocess
from prometheus_client.exposition import ThreadingWSGIServer

logger = logging.getLogger(__name__)

TASKS = Counter("argoml_tasks", "Celery tasks finished, by task name and result.", ["task", "result"])


def multiprocess_enabled() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def exposition_registry() -> CollectorRegistry:
    """The registry to serve: every process's samples in multiprocess mode, this process's otherwise."""
    if not multiprocess_enabled():
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an Authorization header carries `token` as a bearer token, compared in constant time. No
    token configured: nothing matches (an empty token would let an empty header in)."""
    scheme, _, presented = authorization.strip().partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())


StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def guarded_metrics_app(token: str, registry: CollectorRegistry) -> WsgiApp:
    """The worker's metrics server: /healthz for probes (no token; says nothing), /metrics with the token."""
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [b'{"status": "ok"}']
        if path != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"Not found.\n"]
        if not bearer_matches(environ.get("HTTP_AUTHORIZATION", ""), token):
            headers = [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')]
            start_response("401 Unauthorized", headers)
            return [b"Metrics need the bearer token of METRICS_TOKEN.\n"]
        return metrics_app(environ, start_response)

    return app


class _QuietHandler(WSGIRequestHandler):
    """Scrapes every few seconds would flood the worker's log."""

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve_worker_metrics(port: int, token: str, addr: str = "0.0.0.0") -> ThreadingWSGIServer:  # noqa: S104
    """Serve /metrics (and /healthz) from a Celery worker's main process, in a daemon thread."""
    if not token:
        logger.warning("METRICS_TOKEN is not set: the worker's /metrics on :%d refuses every scrape", port)
    app = guarded_metrics_app(token, exposition_registry())
    server = make_server(addr, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    logger.info("worker metrics on :%d/metrics", port)
    return server


def forget_dead_process(pid: int) -> None:
    """Drop a finished process's live gauges, as the multiprocess mode requires."""
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)


def count_task(task_name: str, state: str | None) -> None:
    TASKS.labels(
        task=task_name, result="success" if state == "SUCCESS" else (state or "unknown").lower()
    ).inc()
