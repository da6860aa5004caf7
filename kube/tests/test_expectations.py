"""Expectations: what a reconcile waits to observe after its own writes (pure, with a fake clock)."""

from __future__ import annotations

import pytest

from kube.expectations import Expectations, created, deleted, version
from kube.queue import ObjectKey

KEY = ObjectKey("TFJob", "team", "mnist")
OTHER = ObjectKey("TFJob", "team", "other")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def expected(clock: Clock) -> Expectations:
    return Expectations(ttl=30.0, clock=clock)


def test_a_key_that_expects_nothing_waits_for_nothing(expected):
    assert expected.waiting(KEY) is None
    expected.expect(KEY, [])
    assert expected.waiting(KEY) is None
    assert len(expected) == 0


def test_a_key_waits_until_every_item_is_observed(expected):
    expected.expect(KEY, [created("Pod", "mnist-worker-0"), created("Service", "mnist-worker-0")])
    assert expected.waiting(KEY) == 30.0

    expected.observe(KEY, created("Pod", "mnist-worker-0"))
    assert expected.waiting(KEY) is not None
    expected.observe(KEY, created("Service", "mnist-worker-0"))
    assert expected.waiting(KEY) is None
    assert len(expected) == 0


def test_items_are_told_apart_by_kind_name_and_what_was_done(expected):
    expected.expect(KEY, [deleted("Pod", "a")])
    expected.observe(KEY, created("Pod", "a"))
    expected.observe(KEY, deleted("Service", "a"))
    expected.observe(OTHER, deleted("Pod", "a"))
    assert expected.waiting(KEY) is not None
    expected.observe(KEY, deleted("Pod", "a"))
    assert expected.waiting(KEY) is None


def test_an_observation_nobody_waits_for_is_ignored(expected):
    expected.observe(KEY, version("41"))
    assert expected.waiting(KEY) is None
    assert len(expected) == 0


def test_an_item_never_observed_expires_after_the_ttl(expected, clock):
    expected.expect(KEY, [version("42")])
    clock.now += 10
    expected.expect(KEY, [created("Pod", "late")])
    assert expected.waiting(KEY) == 30.0  # the latest deadline
    clock.now += 25
    assert expected.waiting(KEY) == 5.0  # the first one expired
    clock.now += 5
    assert expected.waiting(KEY) is None
    assert len(expected) == 0


def test_observing_says_whether_the_item_was_one_the_key_waited_for(expected):
    expected.expect(KEY, [version("7"), created("Pod", "a")])
    assert expected.observe(KEY, version("7")) is True
    assert expected.observe(KEY, version("7")) is False  # once
    assert expected.observe(KEY, version("8")) is False
    assert expected.observe(OTHER, created("Pod", "a")) is False
    assert expected.observe(KEY, created("Pod", "a")) is True
    assert len(expected) == 0


def test_a_run_held_back_is_owed_one_run_once_nothing_is_pending(expected):
    expected.expect(KEY, [version("7"), created("Pod", "a")])
    assert expected.take_held(KEY) is False  # no run was held back
    assert expected.waiting(KEY) is not None  # a run found items pending: held
    expected.observe(KEY, version("7"))
    assert expected.take_held(KEY) is False  # still waiting for the pod
    expected.observe(KEY, created("Pod", "a"))
    assert expected.take_held(KEY) is True
    assert expected.take_held(KEY) is False  # owed once


def test_drop_and_clear_forget_held_runs_too(expected):
    for key in (KEY, OTHER):
        expected.expect(key, [version("1")])
        expected.waiting(key)
        expected.observe(key, version("1"))
    expected.drop(KEY)
    assert expected.take_held(KEY) is False
    expected.clear()
    assert expected.take_held(OTHER) is False


def test_drop_forgets_one_key_and_clear_forgets_all(expected):
    expected.expect(KEY, [version("1")])
    expected.expect(OTHER, [version("2")])
    expected.drop(KEY)
    assert expected.waiting(KEY) is None
    assert expected.waiting(OTHER) is not None
    expected.clear()
    assert expected.waiting(OTHER) is None


@pytest.mark.parametrize("ttl", [0, -1.0])
def test_the_ttl_must_be_positive(ttl):
    with pytest.raises(ValueError, match="ttl"):
        Expectations(ttl=ttl)
