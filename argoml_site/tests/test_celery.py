"""A task goes through the real Redis broker to a real worker process and its result comes back."""

import pytest

from argoml_site.celery import app
from argoml_site.tasks import ping


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
