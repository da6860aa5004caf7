"""The leader's hand-off of reconcile keys to the queue: a thread of its own, so a slow or unreachable
Redis never stalls a watch (see kube/controller/runtime.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kube.logging import runtime_logger

from .queue import ObjectKey

logger = runtime_logger(__name__)

Enqueue = Callable[[str, str, str], object]


class KeySink:
    """Hands keys to the reconcile queue on a thread of its own, so a slow Redis never stalls a watch.

    Keys waiting here are deduplicated (the queue would drop the repeats anyway); a key the queue could
    not take, e.g. while Redis is down, stays and is retried: an event's key is never dropped.
    """

    def __init__(self, enqueue: Enqueue, *, retry_seconds: float = 1.0) -> None:
        self._enqueue = enqueue
        self._retry_seconds = retry_seconds
        self._waiting: dict[ObjectKey, None] = {}  # an ordered set: first come, first sent
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self.sent = 0

    def put(self, key: ObjectKey) -> None:
        with self._changed:
            if key not in self._waiting:
                self._waiting[key] = None
                self._changed.notify()

    def run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._stopping.is_set():
                    self._changed.wait()
                if self._stopping.is_set():
                    return
                batch, self._waiting = self._waiting, {}
            failed = self._send(batch)
            if failed:
                with self._changed:
                    self._waiting = {**failed, **self._waiting}
                # Not woken by new keys: while Redis is down, one attempt per retry period.
                if self._stopping.wait(self._retry_seconds):
                    return

    def _send(self, batch: dict[ObjectKey, None]) -> dict[ObjectKey, None]:
        """Enqueue the batch in order; returns the keys not enqueued (from the first failure on)."""
        keys = list(batch)
        for index, key in enumerate(keys):
            try:
                self._enqueue(key.kind, key.namespace, key.name)
            except Exception as error:
                logger.warning(
                    "could not enqueue %s (%s); keeping %d keys to retry", key, error, len(keys) - index
                )
                return dict.fromkeys(keys[index:])
            self.sent += 1
        return {}

    def stop(self) -> None:
        """Stop sending. Keys still waiting are dropped: the next leader's initial list enqueues every key."""
        self._stopping.set()
        with self._changed:
            self._changed.notify()

    @property
    def waiting(self) -> int:
        return len(self._waiting)
