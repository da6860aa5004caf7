"""The rule cache: rules come from memory, and a version bump in Redis reloads them within the interval."""

from __future__ import annotations

import pytest
import redis

from webhooks.injection import Rule
from webhooks.rulecache import RuleCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Source:
    """Stands in for the database (rules) and Redis (version), counting reads."""

    def __init__(self) -> None:
        self.rules: tuple[Rule, ...] = (Rule("a"),)
        self.version: str | None = "1"
        self.loads = 0
        self.version_reads = 0
        self.redis_down = False

    def load(self) -> tuple[Rule, ...]:
        self.loads += 1
        return self.rules

    def read_version(self) -> str | None:
        self.version_reads += 1
        if self.redis_down:
            raise redis.ConnectionError("Connection refused")
        return self.version


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(source, clock) -> RuleCache:
    return RuleCache(source.load, source.read_version, check_interval=3.0, clock=clock)


def test_the_first_call_loads_and_later_calls_are_served_from_memory(cache, source, clock):
    assert cache.rules() == (Rule("a"),)
    clock.now += 2.9
    cache.rules()
    assert (source.loads, source.version_reads) == (1, 1)


def test_an_unchanged_version_is_checked_once_per_interval_without_reloading(cache, source, clock):
    cache.rules()
    clock.now += 3.0
    cache.rules()
    cache.rules()
    assert (source.loads, source.version_reads) == (1, 2)


def test_a_bumped_version_reloads_at_the_next_check(cache, source, clock):
    cache.rules()
    source.rules, source.version = (Rule("b"),), "2"
    assert cache.rules() == (Rule("a"),), "within the interval the held rules are served"
    clock.now += 3.0
    assert cache.rules() == (Rule("b"),)
    assert source.loads == 2


def test_a_lost_version_key_counts_as_a_change(cache, source, clock):
    cache.rules()
    source.version = None
    clock.now += 3.0
    cache.rules()
    assert source.loads == 2


def test_an_unreadable_redis_keeps_the_rules_held_and_retries_at_the_next_interval(cache, source, clock):
    cache.rules()
    source.redis_down, source.rules, source.version = True, (Rule("b"),), "2"
    clock.now += 3.0
    assert cache.rules() == (Rule("a"),)
    source.redis_down = False
    clock.now += 3.0
    assert cache.rules() == (Rule("b"),)


def test_without_redis_at_start_the_rules_are_still_loaded(cache, source):
    source.redis_down = True
    assert cache.rules() == (Rule("a"),)
