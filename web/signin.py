"""Sign-in lockout: after N failed sign-ins for one username, or for one client address, within a window,
that username (or address) is locked for a while. The dashboard's and the admin's sign-in forms and the
API's token endpoint all ask here first, and do not even check a password while locked.

Two Redis keys per subject: a counter that expires with its window, and a lock that expires on its own.
Our own ~100 lines rather than django-axes: we already run Redis, need two counters and a message, and
axes would bring database tables, a middleware, an authentication backend and its own settings.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass
from typing import Any

import redis
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest

from . import redis_outage

logger = logging.getLogger(__name__)

PREFIX = "argoml:signin"
# KEYS[1] = counter, KEYS[2] = lock; ARGV = window seconds, failures allowed, lock seconds.
_FAIL = """
local failures = redis.call('incr', KEYS[1])
if failures == 1 then redis.call('expire', KEYS[1], ARGV[1]) end
if failures >= tonumber(ARGV[2]) then
    redis.call('set', KEYS[2], '1', 'EX', ARGV[3])
    redis.call('del', KEYS[1])
end
return failures
"""


@dataclass(frozen=True)
class Policy:
    """How many failures within `window` lock a subject, and for how long."""

    failures: int
    window_seconds: int
    lock_seconds: int

    @property
    def enabled(self) -> bool:
        return self.failures > 0


def policies() -> dict[str, Policy]:
    return {
        "user": Policy(
            settings.SIGNIN_LOCKOUT_FAILURES,
            settings.SIGNIN_LOCKOUT_WINDOW_SECONDS,
            settings.SIGNIN_LOCKOUT_SECONDS,
        ),
        "addr": Policy(
            settings.SIGNIN_LOCKOUT_ADDRESS_FAILURES,
            settings.SIGNIN_LOCKOUT_WINDOW_SECONDS,
            settings.SIGNIN_LOCKOUT_SECONDS,
        ),
    }


def client_address(request: HttpRequest | None, header: str = "") -> str:
    """The caller's address: REMOTE_ADDR, or the last entry of a header the proxy in front of us appends
    (SIGNIN_CLIENT_ADDRESS_HEADER, e.g. X-Forwarded-For); earlier entries are the client's own claims."""
    if request is None:
        return ""
    if header:
        forwarded = request.headers.get(header, "")
        entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
        if entries:
            return entries[-1]
    return str(request.META.get("REMOTE_ADDR") or "")


def subjects(username: str, address: str) -> dict[str, str]:
    """Kind → Redis-safe id. Usernames are hashed (and case-folded: `Alice` and `alice` share a count)."""
    found = {"user": hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]}
    if address:
        found["addr"] = address
    return found


def lock_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many failed sign-ins for this account or address. Try again in {minutes} {unit}."


def _redis() -> redis.Redis:
    """Sign-in goes on without Redis (fails open, logged): locking every user out while Redis is away would
    be worse than counting nothing for a while; each attempt still costs a password hash. After a failure,
    Redis is skipped for a few seconds (`redis_outage`), so a Redis that hangs does not slow every sign-in."""
    if redis_outage.ongoing(settings.REDIS_URL):
        raise _Skipped("Redis failed a moment ago; not asking again yet")
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.5, socket_timeout=0.5)


class _Skipped(redis.ConnectionError):
    pass


def _failed(error: redis.RedisError) -> None:
    if not isinstance(error, _Skipped):
        redis_outage.began(settings.REDIS_URL)


def locked_for(username: str, address: str) -> int:
    """Seconds until the username and the address may try again (0: now). Redis down: 0, logged."""
    active = policies()
    keys = [f"{PREFIX}:lock:{kind}:{id_}" for kind, id_ in subjects(username, address).items()
            if active[kind].enabled]  # fmt: skip
    if not keys:
        return 0
    try:
        client = _redis()
        with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.ttl(key)
            ttls = pipe.execute()
    except redis.RedisError as error:
        _failed(error)
        logger.warning("Sign-in lockout: Redis did not answer (%s); letting the attempt through", error)
        return 0
    return max([ttl for ttl in ttls if ttl > 0], default=0)


def record_failure(username: str, address: str) -> None:
    active = policies()
    try:
        client = _redis()
        fail = client.register_script(_FAIL)
        for kind, id_ in subjects(username, address).items():
            policy = active[kind]
            if policy.enabled:
                keys = [f"{PREFIX}:count:{kind}:{id_}", f"{PREFIX}:lock:{kind}:{id_}"]
                fail(keys=keys, args=[policy.window_seconds, policy.failures, policy.lock_seconds])
    except redis.RedisError as error:
        _failed(error)
        logger.warning("Sign-in lockout: Redis did not answer (%s); the failure is not counted", error)


def record_success(username: str) -> None:
    """A good password clears the username's count (not the address's: one good account must not
    reset the count of an address trying many others)."""
    try:
        _redis().delete(f"{PREFIX}:count:user:{subjects(username, '')['user']}")
    except redis.RedisError as error:
        _failed(error)
        logger.warning("Sign-in lockout: Redis did not answer (%s)", error)


class LockoutMixin:
    """For Django's authentication forms: refuse while locked, count failures, clear on success."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        address = client_address(self.request, settings.SIGNIN_CLIENT_ADDRESS_HEADER)
        wait = locked_for(username, address)
        if wait:
            raise forms.ValidationError(lock_message(wait), code="locked")
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            record_failure(username, address)
            raise
        record_success(username)
        return cleaned


class LockoutAuthenticationForm(LockoutMixin, AuthenticationForm):
    """The dashboard's sign-in form."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password did not match. Please try again.",
    }


class LockoutAdminAuthenticationForm(LockoutMixin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only, as Django's)."""
