"""In multiprocess mode one /metrics shows the samples of every process (web workers, Celery pool)."""

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from argoml_site.metrics import bearer_matches, exposition_registry, serve_worker_metrics
from argoml_site.tasks import ping


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


COUNT_IN_ANOTHER_PROCESS = """
from prometheus_client import Counter
Counter("argoml_test_events", "events counted in another process").inc(3)
"""


def test_the_web_process_serves_counters_of_other_processes(monkeypatch, tmp_path):
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", COUNT_IN_ANOTHER_PROCESS], env=env, check=True)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert exposition_registry().get_sample_value("argoml_test_events_total") == 3.0


def test_without_a_multiprocess_folder_the_process_serves_its_own_registry(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    registry = exposition_registry()
    assert any(metric.name == "python_info" for metric in registry.collect())


def test_a_worker_serves_the_metrics_of_its_pool_processes(celery_worker_factory, tmp_path):
    port = free_port()
    worker = celery_worker_factory(
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path), WORKER_METRICS_PORT=str(port), METRICS_TOKEN="scrape-1"
    )
    ping.apply_async(queue=worker.queue).get(timeout=60)
    body = ""
    deadline = time.monotonic() + 30
    while "argoml_tasks_total" not in body and time.monotonic() < deadline:
        try:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer scrape-1"}
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                body = response.read().decode()
        except OSError:
            time.sleep(0.2)
    assert 'argoml_tasks_total{result="success",task="argoml_site.ping"} 1.0' in body


@pytest.mark.parametrize(
    ("header", "token", "matches"),
    [
        ("Bearer s3cret", "s3cret", True),
        ("bearer s3cret", "s3cret", True),
        ("  Bearer   s3cret  ", "s3cret", True),
        ("Bearer s3cret2", "s3cret", False),
        ("Bearer ", "s3cret", False),
        ("Basic s3cret", "s3cret", False),
        ("s3cret", "s3cret", False),
        ("", "s3cret", False),
        ("Bearer ", "", False),
        ("", "", False),
    ],
)
def test_bearer_matches_only_the_configured_token(header, token, matches):
    assert bearer_matches(header, token) is matches


def fetch(url: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_worker_metrics_server_needs_the_token_but_its_health_check_does_not():
    port = free_port()
    server = serve_worker_metrics(port, "scrape-2", addr="127.0.0.1")
    try:
        base = f"http://127.0.0.1:{port}"
        status, body = fetch(f"{base}/metrics")
        assert status == 401
        assert b"python_info" not in body
        assert fetch(f"{base}/metrics", "wrong")[0] == 401
        status, body = fetch(f"{base}/metrics", "scrape-2")
        assert status == 200
        assert b"python_info" in body
        assert fetch(f"{base}/healthz") == (200, b'{"status": "ok"}')
        assert fetch(f"{base}/other", "scrape-2")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
