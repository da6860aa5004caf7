"""The injection rules held in memory, so admitting a Pod makes no database query.

Every change to a rule bumps a version in Redis (after its transaction commits) and each web process
reloads its rules when it sees the version move, at most `CHECK_INTERVAL_SECONDS` later: the mechanism
is `kube.versioned`, shared with the namespaces' Pod Security policies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kube import versioned

from .injection import Rule
from .models import InjectionRule
from .rulesversion import read_rules_version

logger = logging.getLogger(__name__)

CHECK_INTERVAL_SECONDS = versioned.DEFAULT_CHECK_INTERVAL_SECONDS


def load_enabled_rules() -> tuple[Rule, ...]:
    return InjectionRule.objects.snapshot()


class RuleCache(versioned.VersionedCache["tuple[Rule, ...]"]):
    """The rules of one process: served from memory, reloaded when the version in Redis moves."""

    def __init__(
        self,
        load: Callable[[], tuple[Rule, ...]] = load_enabled_rules,
        read_version: Callable[[], str | None] = read_rules_version,
        *,
        check_interval: float = CHECK_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__("injection rules", load, read_version, check_interval=check_interval, clock=clock)

    def rules(self) -> tuple[Rule, ...]:
        """The enabled rules, in the order they apply."""
        return self.get()


_process_cache = RuleCache()


def current_rules() -> tuple[Rule, ...]:
    """The rules of this process (what the mutating webhook applies to Pods)."""
    return _process_cache.rules()


def reset_process_cache(**options: Any) -> None:
    """Forget what this process holds; tests start each case from an empty cache (with `options`)."""
    global _process_cache
    _process_cache = RuleCache(**options)
