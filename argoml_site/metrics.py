"""Prometheus exposition for every process kind.

Gunicorn workers and Celery pool processes are separate processes; with PROMETHEUS_MULTIPROC_DIR set
(as `make run` and the deployment do) each writes its samples there and any process can serve the sum.
Workers serve them on WORKER_METRICS_PORT; the web process on /metrics.
"""

from __future__ import annotations

import logging
import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, multiprocess, start_http_server

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


def serve_worker_metrics(port: int) -> None:
    """Serve /metrics from a Celery worker's main process (a daemon thread)."""
    start_http_server(port, addr="0.0.0.0", registry=exposition_registry())  # noqa: S104 - scraped in-cluster
    logger.info("worker metrics on :%d/metrics", port)


def forget_dead_process(pid: int) -> None:
    """Drop a finished process's live gauges, as the multiprocess mode requires."""
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)


def count_task(task_name: str, state: str | None) -> None:
    TASKS.labels(
        task=task_name, result="success" if state == "SUCCESS" else (state or "unknown").lower()
    ).inc()
