"""When an idle TensorBoard is culled, decided at an injected `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tensorboard.culling import idleness, should_cull
from tensorboard.durations import format_duration, parse_duration

CREATED = datetime(2025, 1, 1, 10, 0, tzinfo=UTC)
DEFAULT = timedelta(hours=2)


def tensorboard(
    last_access: str | None = None, idle_timeout: str | None = None, **metadata: Any
) -> dict[str, Any]:
    annotations = {"argoml.io/last-access": last_access} if last_access else {}
    spec: dict[str, Any] = {"logdirs": [{"name": "a", "path": "s3://b/k"}]}
    if idle_timeout:
        spec["idleTimeout"] = idle_timeout
    return {
        "metadata": {
            "name": "tb",
            "creationTimestamp": "2025-01-01T10:00:00Z",
            "annotations": annotations,
            **metadata,
        },
        "spec": spec,
    }


def test_a_never_opened_instance_is_idle_since_its_creation():
    assert not should_cull(tensorboard(), CREATED + timedelta(hours=2), DEFAULT)
    assert should_cull(tensorboard(), CREATED + timedelta(hours=2, seconds=1), DEFAULT)


def test_opening_an_instance_restarts_its_idle_time():
    opened = tensorboard(last_access="2025-01-01T11:30:00Z")
    assert not should_cull(opened, CREATED + timedelta(hours=3), DEFAULT)
    assert should_cull(opened, CREATED + timedelta(hours=3, minutes=31), DEFAULT)
    assert idleness(opened, CREATED + timedelta(hours=3), DEFAULT).idle == timedelta(minutes=90)


def test_the_instances_own_idle_timeout_overrides_the_default():
    assert should_cull(tensorboard(idle_timeout="30m"), CREATED + timedelta(minutes=31), DEFAULT)
    assert not should_cull(tensorboard(idle_timeout="1h30m"), CREATED + timedelta(minutes=89), DEFAULT)


def test_a_malformed_idle_timeout_falls_back_to_the_default_instead_of_living_forever():
    assert should_cull(tensorboard(idle_timeout="forever"), CREATED + timedelta(hours=3), DEFAULT)


def test_an_instance_already_being_deleted_or_without_a_creation_time_is_left_alone():
    deleting = tensorboard(deletionTimestamp="2025-01-01T10:01:00Z")
    assert not should_cull(deleting, CREATED + timedelta(days=1), DEFAULT)
    unknown = tensorboard()
    del unknown["metadata"]["creationTimestamp"]
    assert not should_cull(unknown, CREATED + timedelta(days=1), DEFAULT)


def test_a_clock_behind_the_creation_time_never_makes_idleness_negative():
    assert idleness(tensorboard(), CREATED - timedelta(minutes=5), DEFAULT).idle == timedelta(0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2h", 7200), ("90m", 5400), ("1h30m", 5400), ("1.5h", 5400), ("500ms", 0.5), ("45s", 45)],
)
def test_go_durations_are_read(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "2", "h", "2d", "1h 30m", "-1h", "1h30"])
def test_anything_else_is_refused_naming_the_field(text):
    with pytest.raises(ValueError, match="idleTimeout"):
        parse_duration(text)


def test_durations_are_written_back_in_their_shortest_form():
    assert [format_duration(timedelta(seconds=s)) for s in (7200, 5400, 61, 0)] == [
        "2h",
        "1h30m",
        "1m1s",
        "0s",
    ]
