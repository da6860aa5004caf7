"""The injection rules' version number in Redis: every change bumps it, every webhook process reads it.

Its own module so the models (which bump it) and the rule cache (which reads it and loads the models)
import it from below, and neither imports the other's importer.
"""

from __future__ import annotations

import logging
import threading
from typing import cast

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

VERSION_KEY = "argoml:webhooks:injection-rules:version"
# A Redis that hangs must not hold up a Pod's admission for long (the apiserver gives us 5 s in all).
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


def bump_rules_version() -> None:
    """Tell every process to reload the rules (called on commit of any change to them)."""
    version = _redis().incr(VERSION_KEY)
    logger.info("injection rules changed: version %s", version)


def read_rules_version() -> str | None:
    """The current version, or None when no rule was ever changed (or Redis lost the key)."""
    value = cast(bytes | None, _redis().get(VERSION_KEY))
    return value.decode() if value is not None else None
