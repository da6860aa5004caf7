"""Expectations: what a reconcile waits to observe after its own writes (pure, with a fake clock)."""

from __future__ import annotations

import pytest

from kube.controller.expectations import Expectations, created, deleted, version
from kube.controller.queue import ObjectKey

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


def test_a_child_event_awaited_among_others_holds_the_key_until_the_last_one(expected):
    pods = [created("Pod", f"a-{i}") for i in range(3)]
    expected.expect(KEY, [version("7"), *pods])
    assert expected.observe_awaited(KEY, [pods[0]]) is True  # others still coming: no run of its own
    assert expected.observe_awaited(KEY, [created("Pod", "stranger")]) is False  # news: a run, as ever
    assert expected.observe_awaited(KEY, [pods[1]]) is True
    assert expected.take_held(KEY) is False  # still waiting
    assert expected.observe(KEY, version("7")) is True  # the key's own write: no run of its own either...
    assert expected.observe_awaited(KEY, [pods[2]]) is False  # ...but the last item's event runs it
    assert expected.take_held(KEY) is False  # owed once: that event's run
    assert expected.observe_awaited(OTHER, [pods[0]]) is False  # a key that waits for nothing


def test_the_last_pending_item_being_the_keys_own_write_releases_the_deferred_run(expected):
    expected.expect(KEY, [version("7"), created("Pod", "a")])
    assert expected.observe_awaited(KEY, [created("Pod", "a")]) is True
    assert expected.observe(KEY, version("7")) is True
    assert expected.take_held(KEY) is True  # the status event enqueues the run the pod deferred
    assert expected.take_held(KEY) is False


def test_children_a_run_counted_in_its_status_owe_no_run_whenever_their_events_come(expected):
    pods = [created("Pod", f"a-{i}") for i in range(3)]
    expected.expect(KEY, [version("7"), *pods])
    assert expected.observe_awaited(KEY, [pods[0]]) is True  # came before the run counted it: deferred
    expected.count(KEY, pods)  # the run wrote a status counting all three
    assert expected.observe(KEY, version("7")) is True
    assert expected.observe_awaited(KEY, [pods[1]]) is True
    assert expected.observe_awaited(KEY, [pods[2]]) is True  # the last one: nothing owed
    assert (expected.take_held(KEY), len(expected)) == (False, 0)
    # Counting is for those children only: a child the run did not count still owes its run.
    expected.expect(KEY, [pods[0], created("Pod", "b")])
    expected.count(KEY, [pods[0]])
    assert expected.observe_awaited(KEY, [created("Pod", "b")]) is True  # deferred: a-0 still pending
    assert expected.observe_awaited(KEY, [pods[0]]) is False  # the last: b's run is owed


def test_a_run_that_proceeds_is_the_run_its_key_was_owed(expected, clock):
    expected.expect(KEY, [created("Pod", "a"), created("Pod", "b")])
    assert expected.observe_awaited(KEY, [created("Pod", "a")]) is True  # deferred
    clock.now += 31  # b never came: the next run finds nothing pending
    assert expected.waiting(KEY) is None
    assert expected.take_held(KEY) is False
    assert expected.release_expired() == []


def test_a_held_key_whose_items_never_come_is_released_once_they_expired(expected, clock):
    expected.expect(KEY, [created("Pod", "a"), created("Pod", "b")])
    expected.expect(OTHER, [created("Pod", "c"), created("Pod", "d")])
    assert expected.observe_awaited(KEY, [created("Pod", "a")]) is True
    assert expected.release_expired() == []  # not expired yet
    clock.now += 29
    expected.expect(OTHER, [created("Pod", "e")])  # a later write: OTHER waits longer
    assert expected.observe_awaited(OTHER, [created("Pod", "c")]) is True
    clock.now += 2
    assert expected.release_expired() == [KEY]
    assert (expected.waiting(KEY), expected.take_held(KEY)) == (
        None,
        False,
    )  # released: neither held nor waiting
    assert expected.release_expired() == []
    clock.now += 30
    assert expected.release_expired() == [OTHER]


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
