"""Conditions follow the API conventions: one per type, transition times move only on a status change."""

from datetime import UTC, datetime, timedelta

import pytest

from kube.conditions import find_condition, is_true, set_condition, status_changed, timestamp

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_a_new_condition_is_appended_with_its_transition_time():
    conditions = set_condition([], "Running", "True", "PodsRunning", "all pods run", T0)
    assert conditions == [
        {"type": "Running", "status": "True", "reason": "PodsRunning", "message": "all pods run",
         "lastTransitionTime": "2026-01-02T03:04:05Z"}
    ]  # fmt: skip


def test_a_new_reason_with_the_same_status_keeps_the_transition_time():
    first = set_condition([], "Running", "True", "A", "a", T0)
    second = set_condition(first, "Running", "True", "B", "b", T1)
    assert second[0]["lastTransitionTime"] == timestamp(T0)
    assert (second[0]["reason"], second[0]["message"]) == ("B", "b")


def test_a_status_change_moves_the_transition_time():
    first = set_condition([], "Running", "True", "A", "a", T0)
    second = set_condition(first, "Running", "False", "Done", "finished", T1)
    assert second[0]["lastTransitionTime"] == timestamp(T1)


def test_other_conditions_keep_their_place_and_the_input_is_not_changed():
    original = set_condition(
        set_condition([], "Created", "True", "C", "c", T0), "Running", "True", "R", "r", T0
    )
    snapshot = [dict(condition) for condition in original]
    updated = set_condition(original, "Created", "False", "X", "x", T1)
    assert [condition["type"] for condition in updated] == ["Created", "Running"]
    assert original == snapshot


def test_only_the_three_statuses_are_allowed():
    with pytest.raises(ValueError, match="True, False or Unknown"):
        set_condition([], "Running", "yes", "R", "r", T0)


def test_conditions_are_found_and_read_by_type():
    conditions = set_condition([], "Succeeded", "True", "S", "s", T0)
    assert find_condition(conditions, "Succeeded")["reason"] == "S"
    assert find_condition(conditions, "Failed") is None
    assert is_true(conditions, "Succeeded")
    assert not is_true(conditions, "Failed")
    assert not is_true(None, "Succeeded")


def test_a_status_patch_is_needed_only_when_a_field_differs():
    assert not status_changed({"phase": "Running", "extra": 1}, {"phase": "Running"})
    assert status_changed({"phase": "Running"}, {"phase": "Succeeded"})
    assert status_changed(None, {"phase": "Running"})
