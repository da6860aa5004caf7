"""In multiprocess mode one /metrics shows the samples of every process (web workers, Celery pool)."""

import socket
import subprocess
import sys
import time
import urllib.request

from argoml_site.metrics import exposition_registry
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
    worker = celery_worker_factory(PROMETHEUS_MULTIPROC_DIR=str(tmp_path), WORKER_METRICS_PORT=str(port))
    ping.apply_async(queue=worker.queue).get(timeout=60)
    body = ""
    deadline = time.monotonic() + 30
    while "argoml_tasks_total" not in body and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                body = response.read().decode()
        except OSError:
            time.sleep(0.2)
    assert 'argoml_tasks_total{result="success",task="argoml_site.ping"} 1.0' in body
