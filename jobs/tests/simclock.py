"""The simulator's clock, seen from another process: the test publishes simulated time in Redis, the
operator test worker reads it (settings.JOBS_CLOCK), so deadlines and TTLs follow the kubelet's time."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

import redis
from django.conf import settings

KEY = "jobs:test:simulated-time"


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def now() -> datetime:
    published = _redis().get(KEY)
    if published is None:
        raise RuntimeError(f"no simulated time published under {KEY} in {settings.REDIS_URL}")
    return datetime.fromtimestamp(float(published), UTC)


def publish(client: redis.Redis, epoch_seconds: float) -> None:
    client.set(KEY, repr(epoch_seconds))
