"""The lock that keeps garbage collections from overlapping: one Redis key with a TTL, held by a token.

Acquiring is `SET NX PX`, so exactly one run gets it. Renewing and releasing are Lua scripts that compare
the token first: a run whose lock expired (it was paused past the TTL) and was taken by another can
neither extend nor delete the other's lock. The holder renews it between deletions (`ensure_held`), and
stops before deleting anything once it can no longer prove it still holds the lock.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

LOCK_KEY = "argoml:gc:lock"

# KEYS[1] = lock, ARGV[1] = token, ARGV[2] = ttl in ms.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


class LockLost(RuntimeError):
    """The run can no longer prove it holds the lock: another run may be collecting now."""


def redis_client() -> redis.Redis:
    """A client on settings.REDIS_URL that answers str, with timeouts so a dead Redis fails the run."""
    return redis.Redis.from_url(
        settings.REDIS_URL, decode_responses=True, socket_timeout=10, socket_connect_timeout=5
    )


class RunLock:
    """A lock with a TTL, owned by a random token.

    `ensure_held()` renews it when a third of the TTL has passed since the last renewal, and raises
    LockLost when the renewal finds another owner (or no key), or when the TTL ran out on this process's
    own clock before it could renew (a pause longer than the TTL: someone else may hold it by now).
    """

    def __init__(
        self,
        client: redis.Redis,
        ttl_seconds: float,
        key: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds: {ttl_seconds!r} must be a positive number of seconds.")
        self.client = client
        self.key = key or LOCK_KEY
        self.ttl_seconds = ttl_seconds
        self.token = secrets.token_hex(16)
        self._monotonic = monotonic
        self._renewed_at: float | None = None
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @property
    def _ttl_ms(self) -> int:
        return max(1, round(self.ttl_seconds * 1000))

    def acquire(self) -> bool:
        """Take the lock if nobody holds it; False at once otherwise (no waiting)."""
        started = self._monotonic()
        if self.client.set(self.key, self.token, nx=True, px=self._ttl_ms):
            self._renewed_at = started
            return True
        return False

    def ensure_held(self) -> None:
        """Renew when due; raise LockLost if the lock may belong to someone else now."""
        if self._renewed_at is None:
            raise LockLost("the garbage collection lock was never acquired")
        started = self._monotonic()
        age = started - self._renewed_at
        if age >= self.ttl_seconds:
            raise LockLost(f"the garbage collection lock expired {age - self.ttl_seconds:.1f}s ago")
        if age < self.ttl_seconds / 3:
            return
        if not self._renew(keys=[self.key], args=[self.token, self._ttl_ms]):
            self._renewed_at = None
            raise LockLost("the garbage collection lock was taken over by another run")
        self._renewed_at = started

    def release(self) -> bool:
        """Delete the lock if it is still ours; True when it was."""
        released = bool(self._release(keys=[self.key], args=[self.token]))
        if not released and self._renewed_at is not None:
            logger.warning("the garbage collection lock was no longer ours when the run ended")
        self._renewed_at = None
        return released
