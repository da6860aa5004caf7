"""This process's memory of Redis failing the web's optional uses of it (the API throttles, the sign-in
lockout): after a failure they skip that Redis for `SKIP_SECONDS`, so a Redis that hangs costs one request
its timeout, not every request. Each use says in its module which way it fails (docs/install.md, "When a
dependency is away")."""

from __future__ import annotations

import threading
import time

SKIP_SECONDS = 5.0

_lock = threading.Lock()
_until: dict[str, float] = {}  # Redis URL -> monotonic time until which it is skipped


def ongoing(url: str) -> bool:
    """True while the last failure of the Redis at `url` is recent: do not ask it now."""
    with _lock:
        return time.monotonic() < _until.get(url, 0.0)


def began(url: str) -> None:
    """The Redis at `url` just failed a request: skip it for a while."""
    with _lock:
        _until[url] = time.monotonic() + SKIP_SECONDS


def forget() -> None:
    """Forget every failure (tests that need each request to meet the Redis that is away)."""
    with _lock:
        _until.clear()
