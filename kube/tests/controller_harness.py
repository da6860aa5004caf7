"""What the controller-runtime tests share: a client for a running kubesim, object builders, a recorder of
handler events, and `celery worker --controllers` processes on a Redis database of their own.

Everything that touches Redis uses CONTROLLER_TEST_REDIS_DB (9), flushed by the tests, never any other.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kube.client import KubeClient
from kube.controller.informer import Informer
from kube.ratelimit import TokenBucket
from kube.tests.queue_harness import REDIS_HOST, Worker

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_TEST_REDIS_DB = int(os.environ.get("KUBE_CONTROLLER_TEST_REDIS_DB", "9"))
NAMESPACE = "default"


def redis_url() -> str:
    return f"redis://{REDIS_HOST}/{CONTROLLER_TEST_REDIS_DB}"


def redis_client() -> redis.Redis:
    return redis.Redis.from_url(redis_url(), decode_responses=True)


def client_for(kubeconfig_path: Path, *, request_timeout: float = 10.0) -> KubeClient:
    """A KubeClient on the simulator named by a kubeconfig, without touching settings or get_client()."""
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig_path), client_configuration=configuration)
    return KubeClient(
        k8s.ApiClient(configuration),
        write_limiter=TokenBucket(10_000, 10_000),
        request_timeout=request_timeout,
    )


def configmap(name: str, data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


class Recorder:
    """A handler that remembers every event, and the last one per key."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []  # (type, name, resourceVersion)
        self.last: dict[str, tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        metadata = obj["metadata"]
        with self._lock:
            self.events.append((event_type, metadata["name"], metadata.get("resourceVersion")))
            self.last[metadata["name"]] = (event_type, metadata.get("resourceVersion"))

    def seen(self) -> set[str]:
        with self._lock:
            return {name for _, name, _ in self.events}

    def believed_state(self) -> dict[str, str | None]:
        """name → resourceVersion, as the handler would conclude from the events it got."""
        with self._lock:
            return {name: rv for name, (kind, rv) in self.last.items() if kind != "DELETED"}


@contextmanager
def running(informer: Informer) -> Iterator[Informer]:
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    try:
        yield informer
    finally:
        informer.stop()
        thread.join(10)
        assert not thread.is_alive(), "the informer did not stop"


def cached_state(informer: Informer) -> dict[str, str]:
    """name → resourceVersion of every object in an informer's cache."""
    return {
        name: informer.get(namespace, name)["metadata"]["resourceVersion"]  # type: ignore[index]
        for namespace, name in informer.cached_keys()
    }


def server_state(client: KubeClient, rtype: Any, label_selector: str | None = None) -> dict[str, str]:
    """name → resourceVersion of every object of the type in the test namespace, straight from the server."""
    state = {}
    for page in client.list_pages(rtype, NAMESPACE, label_selector=label_selector):
        for item in page["items"]:
            state[item["metadata"]["name"]] = item["metadata"]["resourceVersion"]
    return state


def controller_worker_env(lease_name: str, **overrides: str) -> dict[str, str]:
    """Settings of a controller test worker, passed through the environment as a deployment passes them:
    the controllers on, leader election and queue timings short enough for tests, unthrottled writes."""
    return {
        "KUBE_CONTROLLERS_ENABLED": "true",
        "KUBE_LEADER_ELECTION_NAMESPACE": "default",
        "KUBE_LEADER_ELECTION_LEASE_NAME": lease_name,
        "KUBE_LEADER_ELECTION_LEASE_DURATION_SECONDS": "2.0",
        "KUBE_LEADER_ELECTION_RENEW_DEADLINE_SECONDS": "1.5",
        "KUBE_LEADER_ELECTION_RETRY_PERIOD_SECONDS": "0.25",
        "KUBE_WATCH_SILENCE_TIMEOUT_SECONDS": "10.0",
        "KUBE_QUEUE_LEASE_SECONDS": "1.0",
        "KUBE_QUEUE_SWEEP_INTERVAL_SECONDS": "0.2",
        "KUBE_QUEUE_RESEND_AFTER_SECONDS": "5.0",
        "KUBE_QUEUE_BACKOFF_BASE_SECONDS": "0.05",
        "KUBE_QUEUE_BACKOFF_MAX_SECONDS": "30.0",
        "KUBE_WRITE_QPS": "10000",
        "KUBE_WRITE_BURST": "10000",
        **overrides,
    }


def start_controller_worker(
    name: str,
    logdir: Path,
    kubeconfig_path: Path,
    *,
    concurrency: int = 2,
    lease_name: str = "argoml-controllers-test",
    queue_redis_url: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> Worker:
    """`celery worker -Q reconcile --controllers` in its own process group, with the sample controller;
    its queue and broker on `queue_redis_url` (default: the test database of the shared Redis)."""
    logfile = logdir / f"{name}.log"
    env = {
        **os.environ,
        "REDIS_URL": queue_redis_url or redis_url(),
        "KUBECONFIG": str(kubeconfig_path),
        **controller_worker_env(lease_name),
        "SAMPLE_WORKER_NAME": name,
        **(extra_env or {}),
    }
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker",
               "--controllers", "-Q", "reconcile", "-n", f"{name}@%h", "-c", str(concurrency),
               "-I", "kube.tests.sample_controller", "--without-gossip", "--without-mingle",
               "--without-heartbeat", "-l", "INFO", "--logfile", str(logfile)]  # fmt: skip
    # The banner and anything printed before logging starts (an import error) go to <name>.out.
    with (logdir / f"{name}.out").open("wb") as output:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, start_new_session=True, stdout=output, stderr=output
        )
    return ControllerWorker(name, process, logfile)


class ControllerWorker(Worker):
    def wait_ready(self, timeout: float = 30.0) -> None:
        try:
            super().wait_ready(timeout)
        except RuntimeError as error:
            output = self.logfile.with_suffix(".out").read_text(errors="replace")
            raise RuntimeError(f"{error}\n--- output:\n{output[-3000:]}") from None
