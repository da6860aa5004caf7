"""The mirror's own thread: watch events wait here and are written in batches (`apply_events`), so a watch
thread never waits for the database and the informer cache keeps up with the cluster.

A batch is what arrived within `linger` seconds of its first event or while the previous one was written,
at most `max_batch` events: a transaction costs the same few round trips whatever its size, so a burst
shares one instead of paying them per event (a mirror row is a few tens of milliseconds later).
Events of one object keep their order: one thread writes, batches go in arrival order, and a batch
applies each uid's events in order. `max_pending` bounds the memory: a watch thread that finds the
queue full waits for the writer (the cache then lags, as it would have with no queue).

While the database cannot be reached, nothing is dropped: the events it refused go back to the head of the
queue, in order, and are tried again after a back-off (0.5 s doubling to 5 s); meanwhile new events queue
behind them, up to `max_pending`. Once the database answers, every transition that happened meanwhile is
written, with its history row. An event refused for a dropped connection while the database answers is
tried again at once, on a new connection (`MAX_TRIES_WHILE_ANSWERING` times, then logged as failed).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, close_old_connections, connection

from kube.logging import log_context, runtime_logger
from kube.models import MirroredResource

from .apply import MirrorHandler, Outcome, apply_events

logger = runtime_logger(__name__)

DEFAULT_MAX_BATCH = 200
DEFAULT_MAX_PENDING = 5000
DEFAULT_LINGER_SECONDS = 0.05
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 5.0
MAX_TRIES_WHILE_ANSWERING = 3

Mirror = Callable[[str, dict[str, Any]], None]
#: The database could not be reached (refused, dropped, restarting): the event is written again later.
UNREACHABLE = (OperationalError, InterfaceError)


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
        self._retry_in = 0.0  # seconds to wait before the next batch: the database was unreachable
        self._unreachable = False  # the last batch found the database unreachable
        self._tries: dict[int, int] = {}  # id of an event refused while the database answered -> tries
        self.batches = 0
        self.written = 0
        self.failed = 0
        self.retried = 0

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
                    if self._retry_in:
                        self._changed.wait_for(lambda: self._stopping, self._retry_in)
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
                unwritten: list[Pending] = []
                try:
                    unwritten = self.write(batch) or []
                finally:
                    with self._changed:
                        if unwritten and not self._stopping:  # back to the head, in their order
                            self._pending.extendleft(reversed(unwritten))
                        self._retry_in = (
                            min(max(self._retry_in * 2, RETRY_FIRST_SECONDS), RETRY_MAX_SECONDS)
                            if unwritten and self._unreachable
                            else 0.0
                        )
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

    def write(self, batch: list[Pending]) -> list[Pending]:
        """Write one batch: each model's events in one `apply_events`, any other mirror called in order.
        Returns the events the database could not take because it was unreachable, in batch order."""
        if not connection.in_atomic_block:
            close_old_connections()  # a broken connection, or one older than CONN_MAX_AGE
        by_model: dict[type[MirroredResource], list[Pending]] = {}
        unwritten: dict[int, Exception] = {}  # position in the batch -> the error the database gave
        for index, pending in enumerate(batch):
            if isinstance(pending.mirror, MirrorHandler):
                by_model.setdefault(pending.mirror.model, []).append(pending)
            else:
                try:
                    pending.mirror(pending.event_type, pending.obj)
                except UNREACHABLE as error:
                    unwritten[index] = error
                except Exception as error:
                    self._failed(pending, error)
        positions = {id(pending): index for index, pending in enumerate(batch)}
        for model, events in by_model.items():
            try:
                outcomes: list[Outcome] = apply_events(model, [(e.event_type, e.obj) for e in events])
            except Exception as error:
                outcomes = [error] * len(events)
            for pending, outcome in zip(events, outcomes, strict=True):
                if isinstance(outcome, UNREACHABLE):
                    unwritten[positions[id(pending)]] = outcome
                elif isinstance(outcome, Exception):
                    self._failed(pending, outcome)
        self._unreachable = bool(unwritten) and not _database_answers()
        if unwritten and not self._unreachable:
            # It answers now: a dropped connection (retried at once, on a new one), or an error of its own
            # that a few tries do not cure (then a failure like any other).
            for index, refusal in sorted(unwritten.items()):
                tries = self._tries.get(id(batch[index]), 0) + 1
                self._tries[id(batch[index])] = tries
                if tries >= MAX_TRIES_WHILE_ANSWERING:
                    del unwritten[index]
                    self._failed(batch[index], refusal)
        for index, pending in enumerate(batch):
            if index not in unwritten:
                self._tries.pop(id(pending), None)
        self.batches += 1
        self.written += len(batch) - len(unwritten)
        if unwritten:
            self.retried += len(unwritten)
            logger.warning("mirror: the database is unreachable; %d events wait to be written again",
                           len(unwritten) + len(self._pending))  # fmt: skip
        return [pending for index, pending in enumerate(batch) if index in unwritten]

    def _failed(self, pending: Pending, error: Exception) -> None:
        self.failed += 1
        with log_context(pending.controller, pending.key):
            logger.error("mirroring a %s event failed: %s", pending.event_type, error, exc_info=error)


def _database_answers() -> bool:
    """Does the database answer a trivial query now (on a fresh connection if the last one broke)?"""
    try:
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except UNREACHABLE:
        return False
    return True
