"""The reconcile task, thin: a key in, the queue's run logic out; the queue sweep, the threads-pool wake-up
and the controllers' bootstep hooked into workers; the periodic resync."""

from __future__ import annotations

from celery import current_app, shared_task
from celery.signals import worker_process_shutdown

from .controller.bootstep import add_step
from .controller.queue import QUEUE_NAME, TASK_NAME, default_queue
from .controller.queue.conf import reconcile_time_limit
from .controller.queue.sweeper import QueueSweepStep
from .controller.queue.wakeup import ThreadPoolWakeStep
from .controller.runtime import resync_all as resync_known_keys
from .events import flush_all as flush_events

# Past the soft limit the reconcile raises inside (a failure, retried with backoff); past the hard one
# the pool child is killed, its lease lapses and the key runs again.
_SOFT_LIMIT = reconcile_time_limit()

current_app.steps["consumer"].add(QueueSweepStep)
current_app.steps["worker"].add(ThreadPoolWakeStep)
add_step(current_app)  # runs only in workers started with --controllers (see kube/controller/bootstep.py)


@worker_process_shutdown.connect
def _flush_event_series(**kwargs: object) -> None:
    """Repeat counts held back by the spam filter reach the cluster before the process goes."""
    flush_events()


@shared_task(
    name=TASK_NAME,
    queue=QUEUE_NAME,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=_SOFT_LIMIT,
    time_limit=_SOFT_LIMIT + 30,
)
def reconcile_key(kind: str, namespace: str, name: str) -> str:
    """Run one reconcile of the key if the queue's state allows it now (`ReconcileQueue.process`)."""
    return default_queue().process(kind, namespace, name)


@shared_task(name="kube.resync_all", ignore_result=True)
def resync_all() -> int:
    """Enqueue every known key of every controller, so a missed event heals (scheduled every 10 minutes)."""
    return resync_known_keys()
