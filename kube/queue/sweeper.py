"""A worker bootstep that runs the queue's sweep on the worker's own timer.

It is what turns a killed worker's lapsed lease into a new run within seconds, without any extra process:
every worker that consumes the `reconcile` queue sweeps; the Lua script makes concurrent sweeps harmless.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import bootsteps
from celery.worker.consumer import Consumer

from .core import QUEUE_NAME, default_queue

logger = logging.getLogger(__name__)


class QueueSweepStep(bootsteps.StartStopStep):
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Consumer, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._timer_entry: Any = None

    def start(self, parent: Consumer) -> None:
        consumed = {queue.name for queue in parent.task_consumer.queues}
        if QUEUE_NAME not in consumed:
            return
        self.stop(parent)
        interval = default_queue().conf.sweep_interval
        self._timer_entry = parent.timer.call_repeatedly(interval, _sweep_once)

    def stop(self, parent: Consumer) -> None:
        if self._timer_entry is not None:
            parent.timer.cancel(self._timer_entry)
            self._timer_entry = None


def _sweep_once() -> None:
    try:
        default_queue().sweep()
    except Exception:  # Redis down, or an app's reconcile module failing to import: keep the timer alive
        logger.exception("Queue sweep failed; retrying at the next tick")
