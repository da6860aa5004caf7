"""Keeps a run's lease alive from a background thread for as long as the reconcile function runs."""

from __future__ import annotations

import contextvars
import logging
import threading
from types import TracebackType

import redis

from .keys import ObjectKey
from .store import QueueStore

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """Context manager: renews the lease every `interval` seconds until the block ends.

    If a renewal finds the lease taken back (this process was paused past the lease, so the sweep handed
    the key to another worker), it stops renewing and sets `lost`; FINISH will then leave the state alone.
    A Redis error is logged and retried at the next tick: the lease only lapses if Redis stays unreachable.
    """

    def __init__(self, store: QueueStore, key: ObjectKey, token: str, lease_ms: int, interval: float) -> None:
        self._store = store
        self._key = key
        self._token = token
        self._lease_ms = lease_ms
        self._interval = interval
        self._stop = threading.Event()
        context = contextvars.copy_context()  # the renewing thread logs under the run's controller and key
        self._thread = threading.Thread(
            target=context.run, args=(self._renew,), name=f"lease {key}", daemon=True
        )
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _renew(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                held = self._store.refresh(self._key, self._token, self._lease_ms)
            except redis.RedisError:
                logger.exception("Cannot renew the lease")
                continue
            if not held:
                self.lost = True
                logger.warning("Lease lost while reconciling: another worker may now run this key")
                return
