"""A threads-pool worker fetches its next message as soon as a task ends, not at its next timer tick.

Celery's threads pool acks from the task's thread and never wakes the worker's event loop, which stops
asking Redis for messages while its prefetch is full (celery/celery#6941);
kube/controller/queue/wakeup.py wakes it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from celery.concurrency.thread import TaskPool
from kombu.asynchronous import Hub

from kube.controller.queue import QueueConf
from kube.controller.queue.conf import DEFAULTS
from kube.controller.queue.wakeup import EventLoopWaker, wake_after_each_task
from kube.tests.queue_harness import (
    Worker,
    emptied,
    queue_for,
    redis_client,
    runs,
    start_worker,
    wait_for,
)

# The shipped timings: the worker's own timers (sweep, heartbeat) fire every 2 s, as in production.
SHIPPED = {name: str(value) for name, value in DEFAULTS.items() if name.startswith("KUBE_QUEUE_")}


@pytest.fixture
def hub() -> Iterator[Hub]:
    hub = Hub()
    yield hub
    hub.close()


def test_a_wake_from_another_thread_ends_the_event_loops_wait_at_once(hub):
    waker = EventLoopWaker()
    waker.register(hub)
    loop = hub.create_loop()
    next(loop)  # the first turn registers nothing new; the next one waits in poll()
    threading.Timer(0.05, waker.wake).start()
    began = time.monotonic()
    next(loop)
    try:
        assert time.monotonic() - began < 0.5  # without the wake: the idle poll timeout, 1 s
    finally:
        hub.remove_reader(waker._read)
        waker.close()


def test_many_wakes_while_the_loop_is_busy_cost_one_turn_and_never_block_the_tasks(hub):
    waker = EventLoopWaker()
    waker.register(hub)
    for _ in range(100_000):  # more than a pipe holds: the writes that do not fit are dropped
        waker.wake()
    loop = hub.create_loop()
    next(loop)
    began = time.monotonic()
    next(loop)  # the pipe was drained by the first turn: this one waits for the idle timeout
    try:
        assert time.monotonic() - began > 0.5
    finally:
        hub.remove_reader(waker._read)
        waker.close()


def test_the_pool_wakes_after_the_tasks_callback_that_acks_it():
    pool = TaskPool(limit=2)
    pool.start()
    order: list[str] = []
    woken = threading.Event()

    def wake(_future: object) -> None:
        order.append("wake")
        woken.set()

    wake_after_each_task(pool, wake)
    try:
        pool.apply_async(lambda: order.append("task"), callback=lambda _result: order.append("ack"))
        assert woken.wait(5)
        assert order == ["task", "ack", "wake"]
    finally:
        pool.stop()


@pytest.fixture
def client():
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture
def worker(tmp_path) -> Iterator[Worker]:
    worker = start_worker("threads", tmp_path, pool="threads", concurrency=2, timings=SHIPPED)
    yield worker
    worker.stop()


def test_a_threads_worker_with_a_full_prefetch_starts_each_next_key_as_a_slot_frees(client, worker):
    worker.wait_ready(timeout=60)
    queue = queue_for(client, QueueConf())
    members = [f"tests/slow-{index}" for index in range(16)]
    for member in members:
        client.rpush(f"probe:sleeps:{member}", 0.1)
    began = time.monotonic()
    for member in members:
        queue.enqueue("Probe", "tests", member.split("/")[1])
    # 16 runs of 0.1 s on 2 threads: 0.8 s of work. Woken only by its 2 s timers, the worker would run
    # 2 keys per tick (16 s).
    wait_for(lambda: all(runs(client, member) for member in members), 30, "every slow key to run")
    assert time.monotonic() - began < 8
