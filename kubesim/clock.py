"""The injectable clock: timestamps, ages, token expiry and simulated-controller timers all read it.

A real-time clock follows the wall clock (plus whatever `advance()` added); a frozen clock stands still until
a test advances it, so leases, TTLs and deadlines are tested without sleeping. Timers registered with
`call_later` fire when their due time is reached, either by real time passing (background thread) or inside
`advance()` itself, in due order, before it returns.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

log = logging.getLogger(__name__)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 with second precision and a `Z`, as Kubernetes writes metav1.Time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@dataclass(order=True)
class Timer:
    """A callback due at `due` (epoch seconds on the simulator clock); `cancel()` stops it."""

    due: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Clock:
    """Simulator time: the wall clock shifted by an offset, or frozen at a moment until advanced."""

    def __init__(self, start: datetime | None = None, *, frozen: bool = False) -> None:
        self._frozen = frozen
        self._offset = 0.0 if start is None else start.timestamp() - time.time()
        self._frozen_at = start.timestamp() if start is not None else time.time()
        self._lock = threading.Condition()
        self._timers: list[Timer] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def time(self) -> float:
        """Seconds since the epoch on the simulator clock."""
        with self._lock:
            return self._time_locked()

    def _time_locked(self) -> float:
        return self._frozen_at if self._frozen else time.time() + self._offset

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)

    def timestamp(self) -> str:
        return format_timestamp(self.now())

    def advance(self, seconds: float) -> None:
        """Move time forward and run every timer that became due, in order, before returning."""
        if seconds < 0:
            raise ValueError(f"clock.advance: seconds must be >= 0, got {seconds}")
        with self._lock:
            if self._frozen:
                self._frozen_at += seconds
            else:
                self._offset += seconds
            self._lock.notify_all()
        self._run_due()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` once `delay` simulator seconds have passed; returns a cancellable Timer."""
        with self._lock:
            timer = Timer(self._time_locked() + max(delay, 0.0), next(self._seq), callback)
            heapq.heappush(self._timers, timer)
            self._lock.notify_all()
            if not self._frozen and self._thread is None:
                self._thread = threading.Thread(target=self._run_forever, name="kubesim-clock", daemon=True)
                self._thread.start()
        return timer

    def next_due(self) -> float | None:
        """When the earliest pending timer is due (simulator epoch seconds), or None without timers."""
        with self._lock:
            pending = [timer.due for timer in self._timers if not timer.cancelled]
            return min(pending) if pending else None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._timers.clear()
            self._lock.notify_all()

    def _pop_due(self) -> Timer | None:
        with self._lock:
            while self._timers and self._timers[0].cancelled:
                heapq.heappop(self._timers)
            if self._timers and self._timers[0].due <= self._time_locked():
                return heapq.heappop(self._timers)
            return None

    def _run_due(self) -> None:
        while (timer := self._pop_due()) is not None:
            try:
                timer.callback()
            except Exception:
                log.exception("kubesim clock timer failed")

    def _run_forever(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                wait = 1.0
                if self._timers:
                    wait = min(wait, max(self._timers[0].due - self._time_locked(), 0.0))
                if wait > 0:
                    self._lock.wait(wait)
            self._run_due()
