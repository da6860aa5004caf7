"""STATUS, the one atomic read of a kind's queue state that tests, benchmarks and the leader use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from kube.controller.queue import Enqueued, ObjectKey, QueueStore, Result

from .queue_harness import emptied, queue_idle, redis_client

KEY = ObjectKey("Widget", "team-a", "w1")
LEASE_MS = 10_000


@pytest.fixture
def client() -> Iterator:
    with emptied(redis_client()) as client:
        yield client


def test_the_status_counts_due_waiting_running_and_dirty_keys(client):
    store = QueueStore(client)
    for name in ("due", "running", "backoff"):
        store.enqueue(ObjectKey("Widget", "team-a", name))
    store.claim(ObjectKey("Widget", "team-a", "running"), "run", LEASE_MS)
    store.enqueue(ObjectKey("Widget", "team-a", "running"))
    store.claim(ObjectKey("Widget", "team-a", "backoff"), "failing", LEASE_MS)
    store.finish(ObjectKey("Widget", "team-a", "backoff"), "failing", Result.ERROR, backoff_base_ms=60_000,
                 backoff_max_ms=60_000)  # fmt: skip

    status = store.status("Widget")
    assert (status.due, status.waiting, status.running, status.dirty) == (1, 1, 1, 1)
    assert status.owed_now
    assert not store.status("Other").owed_now


def test_the_idle_check_is_one_atomic_read_that_a_finish_cannot_slip_between(client):
    """The flaky end of test_runs_of_one_key_never_overlap_even_across_workers: the tests' idle check read
    pending, running and dirty in three commands; a FINISH moving a dirty key from running back to pending
    between the first two made the queue look idle with a run still owed. Here that FINISH lands right
    after the first command the check sends, whatever they are."""
    store = QueueStore(client)
    store.enqueue(KEY)
    assert store.claim(KEY, "run", LEASE_MS).may_run
    assert store.enqueue(KEY).status is Enqueued.DIRTY

    def finish() -> None:
        finished = store.finish(KEY, "run", Result.SUCCESS, backoff_base_ms=1, backoff_max_ms=8)
        assert finished.countdown == 0.0  # the key is owed its run again

    interleaved = InterleavingClient(client, finish)
    assert not queue_idle(interleaved, "Widget")
    assert interleaved.injected


class InterleavingClient(redis.Redis):
    """A client on the same connections that runs `between` once, right after its first command."""

    def __init__(self, client: redis.Redis, between: Callable[[], None]) -> None:
        super().__init__(connection_pool=client.connection_pool)
        self._between = between
        self.injected = False

    def execute_command(self, *args: Any, **options: Any) -> Any:
        reply = super().execute_command(*args, **options)
        if not self.injected:
            self.injected = True
            self._between()
        return reply
