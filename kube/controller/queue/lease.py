"""Keeps a run's lease alive for as long as the reconcile function runs.

One thread per process renews the leases of all the runs in progress there. Starting a thread for each run,
as this module did, cost about a millisecond of wall time before every reconcile started (Thread.start waits
until the new thread runs, which in a busy threads-pool worker means waiting for the GIL) and as much again
to join it afterwards.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from types import TracebackType

from kube.logging import runtime_logger

from .keys import ObjectKey
from .store import QueueStore

logger = runtime_logger(__name__)


class LeaseKeeper:
    """Context manager: the lease is renewed every `interval` seconds until the block ends.

    If a renewal finds the lease taken back (this process was paused past the lease, so the sweep handed
    the key to another worker), it stops renewing and sets `lost`; FINISH will then leave the state alone.
    A Redis error is logged and retried at the next tick: the lease only lapses if Redis stays unreachable.
    `epoch` is the one the lease was last confirmed in: a renewal after Redis lost its data takes the lease
    back in the new epoch (lua/refresh.lua), and FINISH then passes that one.
    """

    def __init__(
        self, store: QueueStore, key: ObjectKey, token: str, lease_ms: int, interval: float, epoch: str
    ) -> None:
        self.store = store
        self.key = key
        self.token = token
        self.lease_ms = lease_ms
        self.interval = interval
        self.epoch = epoch
        self.due = 0.0  # monotonic time of the next renewal, kept by the renewer
        self.context = contextvars.copy_context()  # renewals log under the run's controller and key
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        renewer().add(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        renewer().remove(self)

    def renew(self) -> bool:
        """One REFRESH; False once the lease is no longer this run's (then it is not renewed again).
        Any error is logged and retried at the next tick: the renewer thread serves every run of the process
        and must outlive one bad renewal."""
        try:
            outcome = self.store.refresh(self.key, self.token, self.lease_ms, self.epoch)
        except Exception:  # Redis unreachable, mostly
            logger.exception("Cannot renew the lease; trying again at the next tick")
            return True
        if outcome.held and outcome.epoch != self.epoch:
            logger.warning("Redis lost the queue's data during this run; the run took its lease back")
            self.epoch = outcome.epoch
        return outcome.held


class LeaseRenewer:
    """The thread that renews every lease of this process when it is due, started on first use."""

    def __init__(self) -> None:
        self._leases: set[LeaseKeeper] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, lease: LeaseKeeper) -> None:
        with self._changed:
            lease.due = time.monotonic() + lease.interval
            self._leases.add(lease)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease renewer", daemon=True)
                self._thread.start()
            self._changed.notify()

    def remove(self, lease: LeaseKeeper) -> None:
        with self._changed:
            self._leases.discard(lease)

    def holds(self, lease: LeaseKeeper) -> bool:
        with self._changed:
            return lease in self._leases

    def _due(self) -> list[LeaseKeeper]:
        """Wait until a lease is due; those due, their next renewal already scheduled."""
        with self._changed:
            while True:
                now = time.monotonic()
                due = [lease for lease in self._leases if lease.due <= now]
                if due:
                    for lease in due:
                        lease.due = now + lease.interval
                    return due
                next_due = min((lease.due for lease in self._leases), default=None)
                self._changed.wait(None if next_due is None else next_due - now)

    def _run(self) -> None:
        while True:
            for lease in self._due():
                if not lease.context.run(lease.renew) and self.holds(lease):
                    self.remove(lease)
                    lease.lost = True
                    lease.context.run(
                        logger.warning, "Lease lost while reconciling: another worker may now run this key"
                    )


_renewers: dict[int, LeaseRenewer] = {}
_renewers_lock = threading.Lock()


def renewer() -> LeaseRenewer:
    """This process's renewer. Per pid: a process forked from one with a renewer has a copy of its state
    but not its thread."""
    pid = os.getpid()
    with _renewers_lock:
        existing = _renewers.get(pid)
        if existing is None:
            existing = LeaseRenewer()
            _renewers.clear()
            _renewers[pid] = existing
        return existing
