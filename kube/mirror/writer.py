"""The mirror's own thread: watch events wait here and are written in batches (`apply_events`), so a watch
thread never waits for the database and the informer cache keeps up with the cluster.

A batch is what arrived within `linger` seconds of its first event or while the previous one was written,
at most `max_batch` events: a transaction costs the same few round trips whatever its size, so a burst
shares one instead of paying them per event (a mirror row is a few tens of milliseconds later).
Events of one object keep their order: one thread writes, batches go in arrival order, and a batch
applies each uid's events in order. `max_pending` bounds the memory: a watch thread that finds the
queue full waits for the writer (the cache then lags, as it would have with no queue).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connection

from kube.logging import log_context
from kube.models import MirroredResource

from .apply import MirrorHandler, Outcome, apply_events

logger = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 200
DEFAULT_MAX_PENDING = 5000
DEFAULT_LINGER_SECONDS = 0.05

Mirror = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class Pending:
    """One event to mirror, with the controller and key its errors are logged under."""

    mirror: Mirror
    event_type: str
    obj: dict[str, Any]
    controller: str
    key: str


class MirrorWriter:
    """Writes queued watch events into the mirror on a thread of its own (`run`), batch by batch."""

    def __init__(
        self,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_pending: int = DEFAULT_MAX_PENDING,
        linger: float = DEFAULT_LINGER_SECONDS,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch: {max_batch} must be at least 1.")
        if max_pending < max_batch:
            raise ValueError(f"max_pending: {max_pending} must be at least max_batch ({max_batch}).")
        if linger < 0:
            raise ValueError(f"linger: {linger} must be at least 0.")
        self.max_batch = max_batch
        self.max_pending = max_pending
        self.linger = linger
        self._pending: deque[Pending] = deque()
        self._changed = threading.Condition()
        self._stopping = False
        self._writing = False
        self.batches = 0
        self.written = 0
        self.failed = 0

    def put(self, pending: Pending) -> None:
        """Queue an event; waits while `max_pending` events are queued. Dropped once stopping."""
        with self._changed:
            while len(self._pending) >= self.max_pending and not self._stopping:
                self._changed.wait()
            if self._stopping:
                return
            self._pending.append(pending)
            self._changed.notify_all()

    def run(self) -> None:
        try:
            while True:
                with self._changed:
                    while not self._pending and not self._stopping:
                        self._changed.wait()
                    if self.linger:
                        full = lambda: self._stopping or len(self._pending) >= self.max_batch  # noqa: E731
                        self._changed.wait_for(full, self.linger)
                    if self._stopping:
                        return
                    count = min(len(self._pending), self.max_batch)
                    batch = [self._pending.popleft() for _ in range(count)]
                    self._writing = True
                    self._changed.notify_all()  # room for a watch thread waiting in put()
                try:
                    self.write(batch)
                finally:
                    with self._changed:
                        self._writing = False
                        self._changed.notify_all()
        finally:
            connection.close()  # this thread's connection, which nothing else will close

    def stop(self) -> None:
        """Stop writing: events still queued are dropped (the next leader's initial list mirrors every
        object again); a batch being written finishes."""
        with self._changed:
            self._stopping = True
            self._pending.clear()
            self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """True once every queued event was written (for tests and an orderly handover)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending and not self._writing, timeout)

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def write(self, batch: list[Pending]) -> None:
        """Write one batch: each model's events in one `apply_events`, any other mirror called in order."""
        if not connection.in_atomic_block:
            close_old_connections()  # a broken connection, or one older than CONN_MAX_AGE
        by_model: dict[type[MirroredResource], list[Pending]] = {}
        for pending in batch:
            if isinstance(pending.mirror, MirrorHandler):
                by_model.setdefault(pending.mirror.model, []).append(pending)
            else:
                try:
                    pending.mirror(pending.event_type, pending.obj)
                except Exception as error:
                    self._failed(pending, error)
        for model, events in by_model.items():
            try:
                outcomes: list[Outcome] = apply_events(model, [(e.event_type, e.obj) for e in events])
            except Exception as error:  # the database is down: the next relist or event heals the rows
                outcomes = [error] * len(events)
            for pending, outcome in zip(events, outcomes, strict=True):
                if isinstance(outcome, Exception):
                    self._failed(pending, outcome)
        self.batches += 1
        self.written += len(batch)

    def _failed(self, pending: Pending, error: Exception) -> None:
        self.failed += 1
        with log_context(pending.controller, pending.key):
            logger.error("mirroring a %s event failed: %s", pending.event_type, error, exc_info=error)
