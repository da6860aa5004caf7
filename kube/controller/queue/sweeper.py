"""A worker bootstep that sweeps the queue and keeps the worker's heartbeat, on the worker's own timer.

It is what turns a killed worker's lapsed lease, or the messages that died inside it, into new runs within
seconds, without any extra process: every worker that consumes the `reconcile` queue sweeps (the Lua script
makes concurrent sweeps harmless), and notes in Redis which key's message it received, so that the others
can send those messages again once its heartbeat lapses.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from celery import bootsteps
from celery.signals import task_received
from celery.worker.consumer import Consumer
from celery.worker.request import Request

from kube.logging import runtime_logger

from .core import QUEUE_NAME, TASK_NAME, default_queue

logger = runtime_logger(__name__)

# This worker's id while it consumes `reconcile` (None elsewhere). Unique per start, so a restarted worker
# with the same host name and pid (pid 1 in a container) is still a new worker, and the old one is dead.
_worker_id: str | None = None


class QueueSweepStep(bootsteps.StartStopStep):
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Consumer, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._timer_entries: list[Any] = []

    def start(self, parent: Consumer) -> None:
        global _worker_id
        consumed = {queue.name for queue in parent.task_consumer.queues}
        if QUEUE_NAME not in consumed:
            return
        self.stop(parent)
        _worker_id = f"{parent.hostname}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        conf = default_queue().conf
        # Alive before the event loop receives the first message, so no reservation names an unknown worker.
        _heartbeat_once()
        self._timer_entries = [
            parent.timer.call_repeatedly(conf.heartbeat_interval, _heartbeat_once),
            parent.timer.call_repeatedly(conf.sweep_interval, _sweep_once),
        ]

    def stop(self, parent: Consumer) -> None:
        for entry in self._timer_entries:
            parent.timer.cancel(entry)
        self._timer_entries = []


def _heartbeat_once() -> None:
    if _worker_id is None:
        return
    try:
        default_queue().heartbeat(_worker_id)
    except Exception:  # Redis down: others may judge this worker dead and resend its messages (harmless)
        logger.exception("Queue heartbeat failed; retrying at the next tick")


def _sweep_once() -> None:
    try:
        default_queue().sweep()
    except Exception:  # Redis down, or an app's reconcile module failing to import: keep the timer alive
        logger.exception("Queue sweep failed; retrying at the next tick")


@task_received.connect
def _reserve(request: Request, **kwargs: object) -> None:
    """Runs in the worker's main process as a message arrives (prefetched or with a countdown), before any
    pool process claims it: from now until CLAIM, the message lives only inside this worker."""
    if _worker_id is None or request.task_name != TASK_NAME:
        return
    try:
        kind, namespace, name = request.args
        default_queue().reserve(kind, namespace, name, _worker_id)
    except Exception:  # the resend after KUBE_QUEUE_RESEND_AFTER_SECONDS still covers this message
        logger.exception("Cannot note the received message of %r", request.args)
