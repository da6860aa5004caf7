"""API throttles whose rates are read from settings at request time (DRF reads its own rates once, at
import), so each deployment and each test sets them. Counts live in the Redis cache, shared by every web
process. An empty rate turns a throttle off.

If Redis does not answer, the throttles let the request through (logged): the API stays up through a Redis
outage, and the limits it loses meanwhile are a second line (each sign-in still costs a password hash, and
the Kubernetes API server has its own limits). After a failure they do not ask Redis again for a few
seconds (`redis_outage`), so a Redis that hangs costs one request the cache's timeout, not every one.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from . import redis_outage

logger = logging.getLogger(__name__)


class FailOpen(SimpleRateThrottle):
    """A throttle that lets requests through while its counts cannot be read or written."""

    def allow_request(self, request: Request, view: Any) -> bool:
        location = str(settings.CACHES["default"]["LOCATION"])
        if redis_outage.ongoing(location):
            return True
        try:
            return super().allow_request(request, view)
        except (RedisError, OSError) as error:
            redis_outage.began(location)
            logger.warning("API throttle %s: Redis did not answer (%s); not limiting for %.0f s",
                           type(self).__name__, error, redis_outage.SKIP_SECONDS)  # fmt: skip
            return True


class AnonThrottle(FailOpen, AnonRateThrottle):
    """Anonymous callers, per client address (API_THROTTLE_ANON)."""

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_ANON or None


class UserThrottle(FailOpen, UserRateThrottle):
    """Signed-in callers, per user (API_THROTTLE_USER)."""

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_USER or None


class TokenThrottle(FailOpen):
    """The token endpoint, per client address (API_THROTTLE_TOKEN): each request checks a password."""

    scope = "token"

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_TOKEN or None

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
