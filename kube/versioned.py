"""Settings that admins edit in the database, held in each process's memory and reloaded when they change.

A hot path (an admission review, an API write) must not query the database each time. Every change to
such a setting increments a version number in Redis (after its transaction commits); each process keeps
what it loaded with the version it read first, and compares versions at most every `check_interval`
seconds, so an edit in the admin reaches every process within that interval. When Redis cannot be read, a
process keeps what it holds and tries again at the next interval. The webhooks' injection rules and the
namespaces' Pod Security policies are both held this way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar, cast

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CHECK_INTERVAL_SECONDS = 3.0
# A Redis that hangs must not hold up an admission for long (the apiserver gives a webhook 5 s in all).
REDIS_TIMEOUT_SECONDS = 0.25

_redis_lock = threading.Lock()
_redis_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _redis_client  # one connection pool per process, made on first use
    with _redis_lock:
        if _redis_client is None:
            _redis_client = redis.Redis.from_url(
                settings.REDIS_URL,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
        return _redis_client


class RedisVersion:
    """The version counter of one cached setting, kept in Redis under `key`."""

    def __init__(self, key: str) -> None:
        self.key = key

    def bump(self) -> int:
        """Tell every process to reload (call it on commit of any change)."""
        return int(cast(int, _redis().incr(self.key)))

    def read(self) -> str | None:
        """The current version, or None when nothing was ever changed (or Redis lost the key)."""
        value = cast(bytes | None, _redis().get(self.key))
        return value.decode() if value is not None else None


class VersionedCache(Generic[T]):
    """One process's copy of a setting: served from memory, reloaded when the version in Redis moves."""

    def __init__(
        self,
        name: str,
        load: Callable[[], T],
        read_version: Callable[[], str | None],
        *,
        check_interval: float = DEFAULT_CHECK_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._name = name
        self._load = load
        self._read_version = read_version
        self._check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._value: T | None = None
        self._loaded = False
        self._version: str | None = None
        self._next_check = 0.0

    def get(self) -> T:
        """What the process holds, reloaded first when the interval passed and the version moved."""
        if self._loaded and self._clock() < self._next_check:
            return cast(T, self._value)
        with self._lock:
            if not self._loaded or self._clock() >= self._next_check:
                self._refresh()
            return cast(T, self._value)

    def _refresh(self) -> None:
        # The version is read before the value: a change committed in between is loaded now and loaded
        # once more at the next check, never missed.
        try:
            version = self._read_version()
        except redis.RedisError as error:
            logger.warning("%s: version unreadable (%s); keeping what is held", self._name, error)
            if not self._loaded:
                self._store(self._load(), self._version)
            self._next_check = self._clock() + self._check_interval
            return
        if not self._loaded or version != self._version:
            self._store(self._load(), version)
            logger.info("%s loaded: version %s", self._name, version)
        self._next_check = self._clock() + self._check_interval

    def _store(self, value: T, version: str | None) -> None:
        self._value, self._version, self._loaded = value, version, True
