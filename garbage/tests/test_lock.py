"""The run lock on a real Redis: one holder at a time, renewed by its holder, released only by its owner."""

from __future__ import annotations

import pytest

from garbage.lock import LockLost, RunLock, redis_client


class FakeMonotonic:
    def __init__(self) -> None:
        self.seconds = 1000.0

    def __call__(self) -> float:
        return self.seconds


@pytest.fixture
def redis():
    return redis_client()


def test_only_one_run_gets_the_lock(redis, lock_key):
    first, second = RunLock(redis, 60), RunLock(redis, 60)
    assert first.acquire()
    assert not second.acquire()
    assert redis.get(lock_key) == first.token


def test_a_released_lock_can_be_taken_again(redis):
    first, second = RunLock(redis, 60), RunLock(redis, 60)
    first.acquire()
    assert first.release()
    assert second.acquire()


def test_only_the_owner_releases_the_lock(redis, lock_key):
    owner, intruder = RunLock(redis, 60), RunLock(redis, 60)
    owner.acquire()
    assert not intruder.release()
    assert redis.get(lock_key) == owner.token


def test_a_holder_whose_lock_expired_cannot_release_the_next_holder_s(redis, lock_key):
    clock = FakeMonotonic()
    paused = RunLock(redis, 60, monotonic=clock)
    paused.acquire()
    redis.delete(lock_key)  # the TTL ran out while the holder was paused
    successor = RunLock(redis, 60)
    assert successor.acquire()
    assert not paused.release()
    assert redis.get(lock_key) == successor.token


def test_the_lock_expires_by_itself_when_its_holder_dies(redis, lock_key):
    RunLock(redis, 60).acquire()
    assert 0 < redis.pttl(lock_key) <= 60_000


def test_ensure_held_renews_the_ttl_once_a_third_of_it_passed(redis, lock_key):
    clock = FakeMonotonic()
    lock = RunLock(redis, 30, monotonic=clock)
    lock.acquire()
    redis.pexpire(lock_key, 5_000)  # pretend most of the TTL went by in Redis
    clock.seconds += 5
    lock.ensure_held()
    assert redis.pttl(lock_key) <= 5_000  # too early to renew
    clock.seconds += 6
    lock.ensure_held()
    assert redis.pttl(lock_key) > 25_000


def test_ensure_held_raises_when_another_run_took_the_lock(redis, lock_key):
    clock = FakeMonotonic()
    lock = RunLock(redis, 30, monotonic=clock)
    lock.acquire()
    redis.set(lock_key, "someone-else")
    clock.seconds += 11
    with pytest.raises(LockLost, match="another run"):
        lock.ensure_held()
    assert redis.get(lock_key) == "someone-else"


def test_ensure_held_raises_when_the_ttl_passed_on_the_holder_s_own_clock(redis, lock_key):
    clock = FakeMonotonic()
    lock = RunLock(redis, 30, monotonic=clock)
    lock.acquire()
    clock.seconds += 30
    with pytest.raises(LockLost, match="expired"):
        lock.ensure_held()


def test_ensure_held_without_the_lock_raises(redis):
    with pytest.raises(LockLost):
        RunLock(redis, 30).ensure_held()


def test_a_ttl_must_be_positive(redis):
    with pytest.raises(ValueError, match="ttl_seconds"):
        RunLock(redis, 0)
