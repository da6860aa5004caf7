"""Pure: when a Tensorboard has been idle too long. The caller passes `now`, so tests need no clock.

Idle since its last opening (the API's annotation or status.lastAccess), or since its creation when it
was never opened; it may stay idle for `spec.idleTimeout` (a Go duration) or the settings' default.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import fields
from kube.models import parse_time

from .durations import parse_duration
from .status import last_access


@dataclass(frozen=True)
class Idleness:
    """How long an instance has been idle and how long it may be; `expired` says whether to delete it."""

    since: datetime
    idle: timedelta
    timeout: timedelta

    @property
    def expired(self) -> bool:
        return self.idle > self.timeout


def idle_timeout(tensorboard: fields.RawDict, default: timedelta) -> timedelta:
    """`spec.idleTimeout`, or the default when it is absent or malformed (the schema refuses malformed
    values, so a bad one here was written around validation and must not make the instance immortal)."""
    text = (tensorboard.get("spec") or {}).get("idleTimeout")
    if not text:
        return default
    try:
        return parse_duration(text)
    except ValueError:
        return default


def idleness(tensorboard: fields.RawDict, now: datetime, default_timeout: timedelta) -> Idleness | None:
    """How idle the instance is at `now`; None when it cannot be told (no creation time: never culled)."""
    created = parse_time((tensorboard.get("metadata") or {}).get("creationTimestamp"))
    accessed = parse_time(last_access(tensorboard))
    since = max((moment for moment in (created, accessed) if moment is not None), default=None)
    if since is None:
        return None
    return Idleness(since, max(now - since, timedelta(0)), idle_timeout(tensorboard, default_timeout))


def should_cull(tensorboard: fields.RawDict, now: datetime, default_timeout: timedelta) -> bool:
    """True when the instance has been idle longer than its timeout and is not already being deleted."""
    if (tensorboard.get("metadata") or {}).get("deletionTimestamp"):
        return False
    state = idleness(tensorboard, now, default_timeout)
    return state is not None and state.expired
