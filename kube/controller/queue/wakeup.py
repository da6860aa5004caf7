"""Wakes a threads-pool worker's event loop when a task ends, so it fetches the next message at once.

With the Redis broker and late acks, the worker's event loop stops asking Redis for messages (BRPOP) once
it holds as many unacknowledged messages as its prefetch allows (prefetch multiplier 1: one per thread).
A prefork pool wakes the loop when a child reports a result through its pipe; Celery's threads pool acks
from the thread that ran the task and wakes nothing (celery/celery#6941), so the loop sleeps in poll()
until its next timer: here the queue's sweep and heartbeat, every 2 s. Under load the worker then ran
8 reconciles per 2 s however short they were, and a new event waited behind that (bench/queue_latency.py).

The fix is the classic self-pipe: every task's end (after its ack) writes a byte to a pipe the loop
watches, so the loop's next turn sees the free slot and sends BRPOP again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from celery import bootsteps
from celery.concurrency.thread import TaskPool as ThreadTaskPool
from kombu.asynchronous import Hub

from kube.logging import runtime_logger

logger = runtime_logger(__name__)


class EventLoopWaker:
    """A pipe whose read end the event loop watches; `wake()` may be called from any thread."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def register(self, hub: Hub) -> None:
        """Watch the pipe from `hub` (again after the consumer restarts: a hub reset drops its readers)."""
        hub.add_reader(self._read, self._drain)

    def wake(self, *_: object) -> None:
        with contextlib.suppress(BlockingIOError):  # the pipe is full: a wake-up is already pending
            os.write(self._write, b"\0")

    def _drain(self) -> None:
        """The loop woke; reading the bytes is all there is to do (its next turn sends BRPOP)."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self._read, 4096):
                pass

    def close(self) -> None:
        """For tests. A worker never closes its waker: a task ending late would write to a reused fd."""
        os.close(self._read)
        os.close(self._write)


def wake_after_each_task(pool: ThreadTaskPool, wake: Callable[[Future[Any]], object]) -> None:
    """Call `wake` when each task the pool runs has ended, its success or failure callback (and with it
    the late ack) included. The threads pool offers no hook for this, so its `on_apply` is wrapped."""
    apply = pool.on_apply

    def on_apply(*args: Any, **kwargs: Any) -> Any:
        result = apply(*args, **kwargs)
        result.f.add_done_callback(wake)
        return result

    pool.on_apply = on_apply


class ThreadPoolWakeStep(bootsteps.StartStopStep):
    """In a worker with the threads pool, wakes the event loop after every task (see the module docstring).
    Does nothing with any other pool."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.waker: EventLoopWaker | None = None

    def register_with_event_loop(self, parent: Any, hub: Hub) -> None:
        if not isinstance(parent.pool, ThreadTaskPool):
            return
        if self.waker is None:
            self.waker = EventLoopWaker()
            wake_after_each_task(parent.pool, self.waker.wake)
            logger.debug("threads pool: the event loop is woken after each task")
        self.waker.register(hub)
