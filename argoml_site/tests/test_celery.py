"""A task goes through the real Redis broker to a real worker process and its result comes back."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argoml_site.celery import app
from argoml_site.tasks import ping

REPO = Path(__file__).resolve().parents[2]


def test_a_worker_process_executes_a_task_through_redis(celery_worker_process):
    result = ping.apply_async(queue=celery_worker_process.queue)
    answer = result.get(timeout=60)
    assert set(answer) == {"pong"}
    assert result.successful()


def test_tasks_are_acknowledged_late_one_at_a_time():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1


@pytest.mark.parametrize("queue", ["reconcile", "default"])
def test_each_queue_routes_only_to_itself(queue):
    declared = {q.name: q for q in app.conf.task_queues}
    assert declared[queue].routing_key == queue
    assert declared[queue].exchange.name == queue


def test_worker_logs_use_the_configured_json_format(celery_worker_factory, tmp_path):
    worker = celery_worker_factory(LOG_FORMAT="json")
    ping.apply_async(queue=worker.queue).get(timeout=60)
    worker.process.terminate()
    worker.process.wait(timeout=30)
    log = next(tmp_path.glob(f"worker-{worker.queue}.log")).read_text().splitlines()
    records = [json.loads(line) for line in log if line.startswith("{")]
    assert any("argoml_site.ping" in record["message"] and record["level"] == "INFO" for record in records)


def test_ping_worker_answers_without_debug_or_a_secret_key(celery_worker_process):
    """What `make run` and an operator's health check run: it signs nothing, so it needs no SECRET_KEY."""
    env = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "SECRET_KEY")}
    pinged = subprocess.run(
        [sys.executable, "manage.py", "ping_worker", "--queue", celery_worker_process.queue],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert pinged.returncode == 0, pinged.stderr
    assert "Worker answered a ping task from" in pinged.stdout
