"""Watch plumbing: committed events, the bounded event log, per-watch queues and subscriber delivery."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import ApiError, gone
from kubesim.jsonutil import clone
from kubesim.resources import ResourceType
from kubesim.selectors import EVERYTHING, Selector

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


@dataclass(frozen=True)
class WatchEvent:
    """One committed change. `obj` is the stored snapshot (never mutate it); `old` is the previous one."""

    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    resource: ResourceType
    rv: int

    @property
    def namespace(self) -> str:
        return self.obj["metadata"].get("namespace", "")


class EventLog:
    """The last `size` events, so watches can resume from a resourceVersion; older ones answer 410."""

    def __init__(self, size: int) -> None:
        self._events: deque[WatchEvent] = deque(maxlen=size)
        self.compacted_rv = 0

    def append(self, event: WatchEvent) -> None:
        if len(self._events) == self._events.maxlen:
            self.compacted_rv = self._events[0].rv
        self._events.append(event)

    def compact_all(self, rv: int) -> None:
        """Forget history up to `rv` (used after a restart: earlier events were never logged)."""
        self._events.clear()
        self.compacted_rv = rv

    def since(self, rv: int, resource_key: str) -> list[WatchEvent]:
        """Events after `rv` for one resource, oldest first; 410 if some of them were compacted away."""
        if rv < self.compacted_rv:
            raise gone(f"too old resource version: {rv} ({self.compacted_rv + 1})")
        found = []
        for event in reversed(self._events):
            if event.rv <= rv:
                break
            if event.resource.key == resource_key:
                found.append(event)
        found.reverse()
        return found


def _translate(
    event: WatchEvent, matches: Callable[[dict[str, Any]], bool]
) -> tuple[str, dict[str, Any]] | None:
    """What a selective watcher sees: objects entering the selection are ADDED, leaving it DELETED."""
    now = matches(event.obj)
    if event.type != MODIFIED or event.old is None:
        return (event.type, event.obj) if now else None
    before = matches(event.old)
    if now and before:
        return MODIFIED, event.obj
    if now:
        return ADDED, event.obj
    if before:
        leaving = {
            **event.old,
            "metadata": {
                **event.old["metadata"],
                "resourceVersion": event.obj["metadata"]["resourceVersion"],
            },
        }
        return DELETED, leaving
    return None


@dataclass(eq=False)  # a watcher is equal only to itself
class Watcher:
    """One open watch: the store offers every event of its resource; the watcher keeps what it selects.

    A watcher that falls more than `max_backlog` events behind is closed with a 410, as the apiserver closes
    slow watchers; the client relists.
    """

    resource: ResourceType
    namespace: str | None
    labels: Selector = EVERYTHING
    fields: Selector = EVERYTHING
    max_backlog: int = 100_000
    closed: bool = field(default=False, init=False)
    error: ApiError | None = field(default=None, init=False)
    _queue: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque, init=False, repr=False)
    _ready: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _on_close: Callable[[Watcher], None] | None = field(default=None, init=False, repr=False)

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.namespace and obj["metadata"].get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(obj) and self.fields.matches(obj)

    def offer(self, event: WatchEvent) -> None:
        """Called by the store, under its lock, in commit order."""
        if self.namespace and event.namespace != self.namespace:
            return
        seen = _translate(event, self.matches)
        if seen is None:
            return
        with self._ready:
            if len(self._queue) >= self.max_backlog:
                self._close_locked(gone("watch fell too far behind; relist"))
                return
            self._queue.append(seen)
            self._ready.notify()

    def preload(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        with self._ready:
            self._queue.extend(events)

    def take(self, timeout: float | None) -> list[tuple[str, dict[str, Any]]]:
        """Everything queued (waiting up to `timeout` for the first event); [] on timeout or when closed."""
        with self._ready:
            if not self._queue and not self.closed:
                self._ready.wait(timeout)
            batch = list(self._queue)
            self._queue.clear()
            return batch

    def close(self, error: ApiError | None = None) -> None:
        with self._ready:
            self._close_locked(error)
        if self._on_close is not None:
            self._on_close(self)

    def _close_locked(self, error: ApiError | None) -> None:
        if not self.closed:
            self.closed = True
            self.error = error
            self._ready.notify_all()

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Blocking iteration for Python users; stops when the watch is closed."""
        while True:
            batch = self.take(timeout=0.5)
            yield from batch
            if self.closed and not batch:
                return


Callback = Callable[[str, dict[str, Any]], None]


@dataclass
class Subscription:
    callback: Callback
    resource_key: str | None
    active: bool = True

    def cancel(self) -> None:
        self.active = False


@dataclass
class Subscriptions:
    """What a simulated controller subscribed to while it runs; `cancel` ends them all (again: nothing)."""

    held: list[Subscription] = field(default_factory=list)

    def cancel(self) -> None:
        for subscription in self.held:
            subscription.cancel()
        self.held = []


class Dispatcher:
    """Delivers committed events to subscribers on one background thread, in commit order.

    Delivery happens outside the store lock, so callbacks may read and write the store freely.
    """

    def __init__(self) -> None:
        self._queue: deque[WatchEvent] = deque()
        self._cond = threading.Condition()
        self._subscriptions: list[Subscription] = []
        self._busy = False
        self._thread: threading.Thread | None = None
        self._stopped = False

    def subscribe(self, callback: Callback, resource_key: str | None) -> Subscription:
        subscription = Subscription(callback, resource_key)
        with self._cond:
            self._subscriptions.append(subscription)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kubesim-subscribers", daemon=True)
                self._thread.start()
        return subscription

    def publish(self, event: WatchEvent) -> None:
        with self._cond:
            if self._subscriptions:
                self._queue.append(event)
                self._cond.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every event published so far (and any it caused) was delivered."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._busy, timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stopped)
                if self._stopped:
                    return
                event = self._queue.popleft()
                self._busy = True
                subscriptions = [s for s in self._subscriptions if s.active]
            for subscription in subscriptions:
                if subscription.resource_key in (None, event.resource.key):
                    try:
                        subscription.callback(event.type, clone(event.obj))
                    except Exception:
                        log.exception("kubesim subscriber %r failed on %s", subscription.callback, event.type)
            with self._cond:
                self._busy = False
                self._cond.notify_all()
