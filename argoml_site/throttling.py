"""API throttles whose rates are read from settings at request time (DRF reads its own rates once, at
import), so each deployment and each test sets them. Counts live in the Redis cache, shared by every web
process. An empty rate turns a throttle off."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle


class AnonThrottle(AnonRateThrottle):
    """Anonymous callers, per client address (API_THROTTLE_ANON)."""

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_ANON or None


class UserThrottle(UserRateThrottle):
    """Signed-in callers, per user (API_THROTTLE_USER)."""

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_USER or None


class TokenThrottle(SimpleRateThrottle):
    """The token endpoint, per client address (API_THROTTLE_TOKEN): each request checks a password."""

    scope = "token"

    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_TOKEN or None

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
