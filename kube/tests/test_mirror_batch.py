"""A batch of watch events mirrors as one-at-a-time events would have, in a constant number of statements:
every event of a uid in order, every transition's history row, one bad row never losing the others."""

from __future__ import annotations

from django.db import DataError, connection
from django.test.utils import CaptureQueriesContext

from kube.controller.mirror import Action, apply_event, apply_events
from kube.controller.mirror.decide import Stored, fold
from kube.tests.test_mirror import T0, T1, condition, fields, mirrorapp, statements, widget, widget_models

__all__ = ["mirrorapp", "widget_models"]  # the fixtures, shared with test_mirror

MISSED_DELETE = "A new object took its name, so it was deleted (the delete event was missed)."


def history(History, uid: str) -> list[tuple[str, str, str]]:
    rows = History.objects.filter(resource__uid=uid).order_by("pk")
    return list(rows.values_list("phase", "reason", "resource_version"))


def test_every_transition_of_a_uid_in_one_batch_gets_its_history_row_and_the_row_ends_as_the_last(
    widget_models,
):
    Widget, History = widget_models
    events = [
        ("ADDED", widget("1", phase="Pending")),
        ("MODIFIED", widget("2", phase="Running", conditions=[condition("Running", reason="Up")])),
        (
            "MODIFIED",
            widget("3", phase="Running", conditions=[condition("Running", reason="Up")], message="2/4"),
        ),
        ("MODIFIED", widget("4", phase="Succeeded")),
    ]
    with CaptureQueriesContext(connection) as queries:
        outcomes = apply_events(Widget, events, now=T0)
    assert outcomes == [Action.INSERT, Action.UPDATE, Action.UPDATE, Action.UPDATE]
    assert statements(queries) == ["SELECT", "INSERT", "INSERT"]  # the row, then all its history at once
    row = Widget.objects.get()
    assert (row.phase, row.resource_version, row.status, row.conditions) == (
        "Succeeded",
        "4",
        {"phase": "Succeeded"},
        [],
    )
    assert history(History, "uid-1") == [("Pending", "", "1"), ("Running", "Up", "2"), ("Succeeded", "", "4")]


def test_a_batch_of_many_objects_costs_the_statements_of_one(widget_models):
    Widget, History = widget_models
    added = [("ADDED", widget("1", uid=f"u{i}", name=f"w{i}", phase="Pending")) for i in range(50)]
    with CaptureQueriesContext(connection) as queries:
        assert set(apply_events(Widget, added, now=T0)) == {Action.INSERT}
    assert statements(queries) == ["SELECT", "INSERT", "INSERT"]
    running = [("MODIFIED", widget("2", uid=f"u{i}", name=f"w{i}", phase="Running")) for i in range(50)]
    with CaptureQueriesContext(connection) as queries:
        assert set(apply_events(Widget, running, now=T1)) == {Action.UPDATE}
    assert statements(queries) == ["SELECT", "UPDATE", "INSERT"]
    assert set(Widget.objects.values_list("phase", "resource_version", "updated_at")) == {
        ("Running", "2", T1)
    }
    assert History.objects.count() == 100


def test_duplicates_and_out_of_order_events_in_one_batch_change_nothing(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("10", generation=2, phase="Running", size=8), now=T0)
    events = [
        ("MODIFIED", widget("10", generation=2, phase="Running", size=8)),  # what we hold
        ("MODIFIED", widget("9", generation=1, phase="Pending", size=3)),  # an older generation, late
        ("MODIFIED", widget("11", generation=3, phase="Running", size=9)),
        ("MODIFIED", widget("11", generation=3, phase="Running", size=9)),  # the same again
        ("MODIFIED", widget("10", generation=2, phase="Failed", size=8)),  # older than the one before
    ]
    outcomes = apply_events(Widget, events, now=T1)
    assert outcomes == [Action.DUPLICATE, Action.STALE, Action.UPDATE, Action.DUPLICATE, Action.STALE]
    row = Widget.objects.get()
    assert (row.size, row.generation, row.resource_version, row.phase) == (9, 3, "11", "Running")
    assert History.objects.count() == 1


def test_nothing_brings_back_a_uid_deleted_earlier_in_the_same_batch(widget_models):
    Widget, History = widget_models
    events = [
        ("ADDED", widget("1", phase="Running")),
        ("DELETED", widget("2", phase="Succeeded")),
        ("MODIFIED", widget("3", phase="Running", generation=2)),
    ]
    assert apply_events(Widget, events, now=T1) == [Action.INSERT, Action.DELETE, Action.STALE]
    row = Widget.objects.get()
    assert (row.phase, row.resource_version, row.deleted_at) == ("Succeeded", "2", T1)
    assert history(History, "uid-1") == [
        ("Running", "", "1"),
        ("Succeeded", "", "2"),
        ("Succeeded", "Deleted", "2"),
    ]


def test_a_name_deleted_and_created_again_in_one_batch_keeps_both_rows_and_says_deleted_not_missed(
    widget_models,
):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", uid="old", phase="Running"), now=T0)
    apply_event(Widget, "ADDED", widget("2", uid="other", name="x", phase="Running"), now=T0)
    # The new object's ADDED may come before the old one's DELETED (two informers' order is not kept).
    events = [
        ("ADDED", widget("5", uid="new", phase="Pending")),
        ("DELETED", widget("4", uid="old", phase="Running")),
        ("DELETED", widget("6", uid="other", name="x", phase="Running")),
        ("ADDED", widget("7", uid="other-new", name="x", phase="Pending")),
    ]
    assert apply_events(Widget, events, now=T1) == [
        Action.INSERT,
        Action.DELETE,
        Action.DELETE,
        Action.INSERT,
    ]
    assert dict(Widget.objects.values_list("uid", "deleted_at")) == {
        "old": T1,
        "new": None,
        "other": T1,
        "other-new": None,
    }
    assert History.objects.filter(message=MISSED_DELETE).count() == 0
    assert history(History, "old")[-1] == ("Running", "Deleted", "4")


def test_a_new_object_taking_the_name_of_a_live_row_outside_the_batch_retires_it(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", uid="old", phase="Running"), now=T0)
    events = [
        ("ADDED", widget("2", uid="new", phase="Pending")),
        ("ADDED", widget("3", uid="unrelated", name="y", phase="Pending")),
    ]
    assert apply_events(Widget, events, now=T1) == [Action.INSERT, Action.INSERT]
    assert dict(Widget.objects.values_list("uid", "deleted_at")) == {
        "old": T1,
        "new": None,
        "unrelated": None,
    }
    assert History.objects.filter(resource__uid="old").last().message == MISSED_DELETE


def test_two_objects_of_one_name_in_one_batch_leave_the_later_live(widget_models):
    Widget, History = widget_models
    events = [
        ("ADDED", widget("1", uid="first", phase="Running")),  # its delete was missed
        ("ADDED", widget("2", uid="second", phase="Pending")),
    ]
    assert apply_events(Widget, events, now=T1) == [Action.INSERT, Action.INSERT]
    assert dict(Widget.objects.values_list("uid", "deleted_at")) == {"first": T1, "second": None}
    assert History.objects.filter(resource__uid="first").last().message == MISSED_DELETE


def test_a_row_the_database_refuses_fails_alone_and_the_rest_of_the_batch_is_written(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", uid="kept", name="kept", phase="Pending"), now=T0)
    too_long = widget("1", uid="bad", name="bad", phase="Pending")
    too_long["metadata"]["namespace"] = "n" * 64  # over the column's 63 characters
    no_uid = widget("1", name="anonymous")
    del no_uid["metadata"]["uid"]
    events = [
        ("ADDED", widget("1", uid="a", name="a", phase="Pending")),
        ("ADDED", too_long),
        ("ADDED", no_uid),
        ("MODIFIED", widget("2", uid="kept", name="kept", phase="Running")),
        ("UPSERTED", widget("2", uid="a", name="a", phase="Running")),
    ]
    outcomes = apply_events(Widget, events, now=T1)
    assert outcomes[0] is Action.INSERT
    assert isinstance(outcomes[1], DataError)
    assert isinstance(outcomes[2], ValueError)
    assert "metadata.uid is missing" in str(outcomes[2])
    assert outcomes[3] is Action.UPDATE
    assert isinstance(outcomes[4], ValueError)
    assert "not 'UPSERTED'" in str(outcomes[4])
    assert dict(Widget.objects.values_list("uid", "phase")) == {"a": "Pending", "kept": "Running"}
    assert History.objects.count() == 3


# -- the pure fold ------------------------------------------------------------------------------------


def test_fold_of_an_unseen_uid_added_then_deleted_is_one_deleted_insert_with_both_history_rows():
    folded = fold(
        None, [("ADDED", fields(widget("1", phase="Running"))), ("DELETED", fields(widget("2")))], T0
    )
    assert folded.actions == [Action.INSERT, Action.DELETE]
    assert (folded.inserts, folded.deleted, folded.content["resource_version"]) == (True, True, "2")
    assert [(row.phase, row.reason, version) for row, version in folded.history] == [
        ("Running", "", "1"),
        ("", "", "2"),  # the phase went from Running to none: a transition
        ("", "Deleted", "2"),
    ]


def test_fold_of_events_that_change_nothing_writes_nothing():
    held = Stored(7, "5", 2, 2, "Running", [], False)
    same = fields(widget("5", generation=2, phase="Running", observed=2))
    older = fields(widget("4", generation=1, phase="Pending", observed=1))
    folded = fold(held, [("MODIFIED", same), ("MODIFIED", older)], T0)
    assert folded.actions == [Action.DUPLICATE, Action.STALE]
    assert (folded.writes, folded.inserts, folded.history) == (False, False, [])


def test_fold_of_a_delete_carrying_content_we_hold_marks_the_row_deleted_without_rewriting_it():
    held = Stored(7, "5", 2, 2, "Running", [], False)
    folded = fold(held, [("DELETED", fields(widget("5", generation=2, phase="Running", observed=2)))], T0)
    assert folded.actions == [Action.DELETE]
    assert (folded.content, folded.deleted) == (None, True)
    assert [(row.phase, row.reason) for row, _ in folded.history] == [("Running", "Deleted")]
    after = fold(Stored(7, "5", 2, 2, "Running", [], True), [("MODIFIED", fields(widget("6")))], T0)
    assert (after.actions, after.writes) == ([Action.STALE], False)
