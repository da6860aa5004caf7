"""One pending re-sync per object, on the simulator clock, and the back-off of failed creates: what the
Deployment and ReplicaSet controllers each keep (a progress-deadline check, a minReadySeconds re-check, a
retry after the API server refused a child), and the frame those two controllers share (`OwnerController`)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kubesim.clock import Clock, Timer
from kubesim.store import DELETED, Store, Subscriptions

FIRST_RETRY, MAX_RETRY = 1.0, 300.0  # seconds: the first retry after a refused create, doubled up to this


class Resyncs:
    """Timers and back-off by object uid; a newer timer replaces the pending one."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._timers: dict[str, Timer] = {}
        self._backoff: dict[str, float] = {}  # the next retry delay, while creates keep failing

    def arm(self, uid: str, delay: float, action: Callable[[], None]) -> None:
        with self._lock:
            if (old := self._timers.pop(uid, None)) is not None:
                old.cancel()
            self._timers[uid] = self.clock.call_later(delay, action)

    def retry(self, uid: str, action: Callable[[], None]) -> None:
        """A create failed: `action` again after the back-off, which doubles for the next failure."""
        with self._lock:
            delay = self._backoff.get(uid, FIRST_RETRY)
            self._backoff[uid] = min(delay * 2, MAX_RETRY)
        self.arm(uid, delay, action)

    def retrying(self, uid: str) -> bool:
        with self._lock:
            return uid in self._backoff

    def succeeded(self, uid: str) -> None:
        """Creates work again: the next failure starts the back-off afresh."""
        with self._lock:
            self._backoff.pop(uid, None)

    def forget(self, uid: str) -> None:
        """The object is gone: its timer and back-off with it."""
        with self._lock:
            self._backoff.pop(uid, None)
            if (timer := self._timers.pop(uid, None)) is not None:
                timer.cancel()

    def cancel_all(self) -> None:
        with self._lock:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()


class OwnerController(ABC):
    """A controller that syncs every object of one owner kind (Deployments, ReplicaSets): one sync at a
    time, the subscriptions `start()` makes, and a pending re-sync per owner uid; `stop()` ends both."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.RLock()
        self._subscriptions = Subscriptions()
        self._resyncs = Resyncs(store.clock)

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def reconcile(self, namespace: str, name: str) -> None: ...

    def stop(self) -> None:
        self._subscriptions.cancel()
        self._resyncs.cancel_all()

    def _on_owner(self, event_type: str, owner: dict[str, Any]) -> None:
        """An owner changed: it syncs; a deleted one takes its pending re-sync and back-off with it."""
        metadata = owner["metadata"]
        if event_type == DELETED:
            self._resyncs.forget(metadata["uid"])
            return
        self.reconcile(metadata.get("namespace", ""), metadata["name"])
