"""The injection rules held in memory, so admitting a Pod makes no database query.

Every change to a rule increments a version number in Redis (after its transaction commits). Each web
process keeps the rules it loaded with the version it read first, and compares versions at most every
`CHECK_INTERVAL_SECONDS`: a rule edited in the admin reaches every process within that interval. When
Redis cannot be read, a process keeps the rules it has and tries again at the next interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from .injection import Rule
from .models import InjectionRule
from .rulesversion import read_rules_version

logger = logging.getLogger(__name__)

CHECK_INTERVAL_SECONDS = 3.0


def load_enabled_rules() -> tuple[Rule, ...]:
    return InjectionRule.objects.snapshot()


class RuleCache:
    """The rules of one process: served from memory, reloaded when the version in Redis moves."""

    def __init__(
        self,
        load: Callable[[], tuple[Rule, ...]] = load_enabled_rules,
        read_version: Callable[[], str | None] = read_rules_version,
        *,
        check_interval: float = CHECK_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._read_version = read_version
        self._check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._rules: tuple[Rule, ...] | None = None
        self._version: str | None = None
        self._next_check = 0.0

    def rules(self) -> tuple[Rule, ...]:
        """The enabled rules, in the order they apply."""
        rules = self._rules
        if rules is not None and self._clock() < self._next_check:
            return rules
        with self._lock:
            if self._rules is None or self._clock() >= self._next_check:
                self._refresh()
            assert self._rules is not None, "_refresh loads the rules or raises"
            return self._rules

    def _refresh(self) -> None:
        # The version is read before the rules: a change committed in between is loaded now and loaded
        # once more at the next check, never missed.
        try:
            version = self._read_version()
        except redis.RedisError as error:
            logger.warning("injection rules: version unreadable (%s); keeping the rules held", error)
            if self._rules is None:
                self._rules = self._load()
            self._next_check = self._clock() + self._check_interval
            return
        if self._rules is None or version != self._version:
            self._rules = self._load()
            self._version = version
            logger.info("injection rules loaded: %d enabled, version %s", len(self._rules), version)
        self._next_check = self._clock() + self._check_interval


_process_cache = RuleCache()


def current_rules() -> tuple[Rule, ...]:
    """The rules of this process (what the mutating webhook applies to Pods)."""
    return _process_cache.rules()


def reset_process_cache(**options: Any) -> None:
    """Forget what this process holds; tests start each case from an empty cache (with `options`)."""
    global _process_cache
    _process_cache = RuleCache(**options)
