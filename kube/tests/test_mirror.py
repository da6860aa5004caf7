"""Watch events mirror into rows keyed by uid, with history on transitions; stale or repeated events change
nothing. Against PostgreSQL, with the test-only `mirrorapp` (a Widget model) installed by a fixture."""

from __future__ import annotations

import copy
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings

from kube.controller.mirror import Action, apply_event, mirror_handler
from kube.controller.mirror import apply as mirror_apply
from kube.controller.mirror.decide import Stored, decide, transition

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)


@pytest.fixture(scope="module")
def mirrorapp(django_db_setup, django_db_blocker):
    """Install kube.tests.mirrorapp and migrate it into the test database for this module only."""
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "kube.tests.mirrorapp"]):
        with django_db_blocker.unblock():
            call_command("migrate", "mirrorapp", verbosity=0)
        from kube.tests.mirrorapp.models import Widget, WidgetHistory

        yield Widget, WidgetHistory
        with django_db_blocker.unblock():
            call_command("migrate", "mirrorapp", "zero", verbosity=0)


@pytest.fixture
def widget_models(mirrorapp, db):
    return mirrorapp


def widget(
    rv: str = "1",
    *,
    uid: str = "uid-1",
    name: str = "w",
    generation: int = 1,
    phase: str | None = None,
    conditions: list[dict] | None = None,
    observed: int | None = None,
    message: str = "",
    size: int = 3,
) -> dict:
    status: dict = {}
    if phase is not None:
        status["phase"] = phase
    if conditions is not None:
        status["conditions"] = conditions
    if observed is not None:
        status["observedGeneration"] = observed
    if message:
        status["message"] = message
    return {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": rv,
            "generation": generation,
            "labels": {"app": "demo"},
            "creationTimestamp": "2026-03-01T11:00:00Z",
        },
        "spec": {"size": size, "template": {"any": ["thing"]}},
        "status": status,
    }


def condition(type_: str, status: str = "True", reason: str = "R", message: str = "", at: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


def statements(queries: CaptureQueriesContext) -> list[str]:
    """The SQL verbs run, leaving out savepoints (the test's own transaction adds those); Django logs an
    executemany as "<n> times: <sql>"."""
    return [
        query["sql"].split(" times: ", 1)[-1].split()[0]
        for query in queries.captured_queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT"))
    ]


# -- pure decisions -------------------------------------------------------------------------------------


def fields(obj: dict) -> dict:
    from kube.models import MirroredResource

    return MirroredResource.observed_fields(obj)


def stored(rv: str = "5", generation: int = 2, observed: int | None = 2, deleted: bool = False) -> Stored:
    return Stored(1, rv, generation, observed, "Running", [condition("Running")], deleted)


def test_an_event_for_an_unknown_uid_inserts_and_records_history_only_when_it_has_a_state():
    assert decide(None, "ADDED", fields(widget())).transition is False
    assert decide(None, "ADDED", fields(widget(phase="Pending"))).transition is True


def test_the_same_resource_version_again_is_a_duplicate():
    assert decide(stored(rv="5"), "MODIFIED", fields(widget("5", generation=2))).action is Action.DUPLICATE


def test_a_lower_generation_or_observed_generation_is_stale_whatever_its_resource_version():
    assert decide(stored(), "MODIFIED", fields(widget("9", generation=1))).action is Action.STALE
    assert decide(stored(), "MODIFIED", fields(widget("9", generation=2, observed=1))).action is Action.STALE


def test_nothing_comes_back_after_a_deletion():
    gone = stored(deleted=True)
    assert decide(gone, "MODIFIED", fields(widget("9", generation=3))).action is Action.STALE
    assert decide(gone, "ADDED", fields(widget("9", generation=3))).action is Action.STALE
    assert decide(gone, "DELETED", fields(widget("9", generation=3))).action is Action.DUPLICATE


def test_a_delete_is_final_even_when_its_object_is_not_newer_but_then_keeps_our_content():
    decision = decide(stored(rv="5"), "DELETED", fields(widget("5", generation=2)))
    assert (decision.action, decision.write_content, decision.deleted) == (Action.DELETE, False, True)


def test_an_unknown_event_type_is_refused_by_name():
    with pytest.raises(ValueError, match="not 'BOOKMARK'"):
        decide(None, "BOOKMARK", fields(widget()))


def test_a_transition_takes_reason_message_and_time_from_the_newest_changed_condition():
    before = [condition("Created", at="2026-03-01T11:00:00Z")]
    after = [
        condition("Created", at="2026-03-01T11:00:00Z"),
        condition("Running", reason="PodsRunning", message="4/4 up", at="2026-03-01T11:30:00Z"),
        condition("Restarting", status="False", reason="Ok", at="2026-03-01T11:20:00Z"),
    ]
    row = transition(fields(widget(conditions=after)), before, now=T0)
    assert (row.phase, row.reason, row.message) == ("Running", "PodsRunning", "4/4 up")
    assert row.at == datetime(2026, 3, 1, 11, 30, tzinfo=UTC)


def test_a_phase_only_transition_is_timed_now_and_explained_by_the_status_message():
    row = transition(fields(widget(phase="Ready", message="serving")), [], now=T0)
    assert (row.at, row.phase, row.reason, row.message) == (T0, "Ready", "", "serving")


# -- against the database -------------------------------------------------------------------------------


def test_an_added_object_becomes_a_row_with_identity_spec_status_and_the_apps_own_columns(widget_models):
    Widget, History = widget_models
    with CaptureQueriesContext(connection) as queries:
        assert apply_event(Widget, "ADDED", widget(phase="Pending"), now=T0) is Action.INSERT
    assert statements(queries) == ["SELECT", "INSERT", "INSERT"]
    row = Widget.objects.get()
    assert (row.uid, row.namespace, row.name, row.key) == ("uid-1", "team-a", "w", "team-a/w")
    assert row.spec == {"size": 3, "template": {"any": ["thing"]}}
    assert (row.phase, row.resource_version, row.generation, row.size) == ("Pending", "1", 1, 3)
    assert row.created_at == datetime(2026, 3, 1, 11, 0, tzinfo=UTC)
    assert (row.updated_at, row.deleted_at) == (T0, None)
    assert list(History.objects.values_list("phase", "at")) == [("Pending", T0)]


def test_a_phase_change_updates_the_row_and_appends_history_in_three_statements(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", phase="Pending"), now=T0)
    running = widget("2", phase="Running", conditions=[condition("Running", reason="PodsRunning", at="")])
    with CaptureQueriesContext(connection) as queries:
        assert apply_event(Widget, "MODIFIED", running, now=T1) is Action.UPDATE
    assert statements(queries) == ["SELECT", "UPDATE", "INSERT"]
    assert Widget.objects.get().phase == "Running"
    assert list(History.objects.values_list("phase", "reason", "resource_version")) == [
        ("Pending", "", "1"),
        ("Running", "PodsRunning", "2"),
    ]


def test_an_update_that_changes_no_phase_or_condition_appends_no_history(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", phase="Running", message="1/4"), now=T0)
    with CaptureQueriesContext(connection) as queries:
        apply_event(Widget, "MODIFIED", widget("2", phase="Running", message="2/4", size=5), now=T1)
    assert statements(queries) == ["SELECT", "UPDATE"]
    row = Widget.objects.get()
    assert (row.status["message"], row.size, row.updated_at) == ("2/4", 5, T1)
    assert History.objects.count() == 1


def test_a_repeated_event_changes_nothing_and_costs_one_select(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("7", phase="Running"), now=T0)
    with CaptureQueriesContext(connection) as queries:
        assert apply_event(Widget, "MODIFIED", widget("7", phase="Running"), now=T1) is Action.DUPLICATE
        assert apply_event(Widget, "ADDED", widget("7", phase="Running"), now=T1) is Action.DUPLICATE
    assert statements(queries) == ["SELECT", "SELECT"]
    assert Widget.objects.get().updated_at == T0
    assert History.objects.count() == 1


def test_an_event_from_an_older_generation_arriving_late_changes_nothing(widget_models):
    Widget, _ = widget_models
    apply_event(Widget, "ADDED", widget("20", generation=2, size=8), now=T0)
    assert apply_event(Widget, "MODIFIED", widget("19", generation=1, size=3), now=T1) is Action.STALE
    assert (Widget.objects.get().size, Widget.objects.get().resource_version) == (8, "20")


def test_a_deletion_keeps_the_row_and_its_history_and_nothing_brings_it_back(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", phase="Running"), now=T0)
    assert apply_event(Widget, "DELETED", widget("2", phase="Succeeded"), now=T1) is Action.DELETE
    row = Widget.objects.get()
    assert (row.deleted_at, row.phase, row.resource_version) == (T1, "Succeeded", "2")
    assert list(History.objects.values_list("phase", "reason")) == [
        ("Running", ""),
        ("Succeeded", ""),
        ("Succeeded", "Deleted"),
    ]

    late = widget("3", phase="Running", generation=2)
    assert apply_event(Widget, "MODIFIED", late, now=T1) is Action.STALE
    assert apply_event(Widget, "ADDED", late, now=T1) is Action.STALE
    assert apply_event(Widget, "DELETED", late, now=T1) is Action.DUPLICATE
    assert Widget.objects.get().phase == "Succeeded"
    assert History.objects.count() == 3


def test_a_relisted_deletion_carrying_the_object_we_hold_marks_it_deleted(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("4", phase="Running"), now=T0)
    assert apply_event(Widget, "DELETED", widget("4", phase="Running"), now=T1) is Action.DELETE
    assert Widget.objects.get().deleted_at == T1
    assert History.objects.last().reason == "Deleted"


def test_a_deletion_of_an_object_never_seen_leaves_a_deleted_row_so_it_cannot_reappear(widget_models):
    Widget, History = widget_models
    assert apply_event(Widget, "DELETED", widget("9", phase="Failed"), now=T1) is Action.INSERT
    assert Widget.objects.get().deleted_at == T1
    assert apply_event(Widget, "ADDED", widget("8", phase="Running"), now=T1) is Action.STALE
    assert list(History.objects.values_list("phase", "reason")) == [("Failed", ""), ("Failed", "Deleted")]


def test_a_new_object_with_the_name_of_a_live_row_retires_the_old_row(widget_models):
    Widget, History = widget_models
    apply_event(Widget, "ADDED", widget("1", uid="old", phase="Running"), now=T0)
    assert apply_event(Widget, "ADDED", widget("2", uid="new", phase="Pending"), now=T1) is Action.INSERT
    rows = dict(Widget.objects.values_list("uid", "deleted_at"))
    assert rows == {"old": T1, "new": None}
    old_history = History.objects.filter(resource__uid="old").values_list("reason", "message")
    assert list(old_history)[-1] == (
        "Deleted",
        "A new object took its name, so it was deleted (the delete event was missed).",
    )


@pytest.mark.django_db(transaction=True)
def test_a_writer_of_a_row_another_batch_holds_waits_for_it_and_decides_from_its_row(mirrorapp):
    Widget, History = mirrorapp
    apply_event(Widget, "ADDED", widget("1", phase="Pending"), now=T0)
    holding, release = threading.Event(), threading.Event()
    outcomes: list[Action] = []

    def first_writer() -> None:
        try:
            with transaction.atomic():
                outcomes.append(apply_event(Widget, "MODIFIED", widget("2", phase="Running"), now=T0))
                holding.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    def second_writer() -> None:
        try:
            outcomes.append(apply_event(Widget, "MODIFIED", widget("3", phase="Succeeded"), now=T1))
        finally:
            connection.close()

    first = threading.Thread(target=first_writer)
    first.start()
    assert holding.wait(timeout=30)
    second = threading.Thread(target=second_writer)
    second.start()
    with connection.cursor() as cursor:
        wait_until(lambda: _lock_waits(cursor) == 1, "the second writer to wait for the first's row lock")
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert outcomes == [Action.UPDATE, Action.UPDATE]
    assert Widget.objects.get().phase == "Succeeded"
    assert list(History.objects.values_list("phase", flat=True)) == ["Pending", "Running", "Succeeded"]


def _lock_waits(cursor) -> int:
    cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
    return cursor.fetchone()[0]


def wait_until(condition, what: str, attempts: int = 3000) -> None:
    for _ in range(attempts):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"gave up waiting for {what}")


def test_an_object_without_a_uid_is_refused_by_field_name(widget_models):
    Widget, _ = widget_models
    obj = widget()
    del obj["metadata"]["uid"]
    with pytest.raises(ValueError, match=r"metadata\.uid is missing"):
        apply_event(Widget, "ADDED", obj)


def test_the_handler_for_a_controller_mirrors_events(widget_models):
    Widget, _ = widget_models
    handler = mirror_handler(Widget)
    handler("ADDED", widget("1", phase="Pending"))
    handler("MODIFIED", widget("2", phase="Running"))
    assert Widget.objects.get().phase == "Running"
    assert mirror_handler(Widget) == handler  # registering the controller twice registers the same one


@pytest.mark.django_db(transaction=True)
def test_two_writers_adding_the_same_object_at_once_leave_one_row(mirrorapp):
    Widget, History = mirrorapp
    barrier = threading.Barrier(2)
    outcomes: list[Action] = []
    real_read = mirror_apply._read

    def read_then_wait(model, uids):
        found = real_read(model, uids)
        if not found:
            barrier.wait(timeout=10)  # both have seen "no row" before either inserts
        return found

    def add() -> None:
        try:
            outcomes.append(apply_event(Widget, "ADDED", copy.deepcopy(widget("1", phase="Pending")), now=T0))
        finally:
            connection.close()

    mirror_apply._read = read_then_wait
    try:
        threads = [threading.Thread(target=add) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        mirror_apply._read = real_read
    assert sorted(outcome.value for outcome in outcomes) == ["duplicate", "insert"]
    assert Widget.objects.count() == 1
    assert History.objects.count() == 1


def test_an_informer_relisting_from_the_simulator_keeps_the_mirror_in_step(widget_models, settings):
    """The whole path over HTTP: objects in kubesim → informer relists → rows, including a deletion that
    happened while nobody watched."""
    from kube.client import get_client, reset_client
    from kube.controller.informer import Informer
    from kube.resources import CONFIGMAP
    from kubesim.testing import running_simulator

    Widget, _ = widget_models
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        reset_client()
        client = get_client()
        informer = Informer(client, CONFIGMAP, mirror_handler(Widget), namespace="default")
        for name in ("a", "b"):
            client.create(
                CONFIGMAP, {"metadata": {"name": name, "namespace": "default"}, "data": {"k": name}}
            )
        informer.relist()
        assert sorted(Widget.objects.values_list("name", flat=True)) == ["a", "b"]

        client.patch(CONFIGMAP, "a", {"metadata": {"labels": {"tier": "gold"}}}, "default")
        client.delete(CONFIGMAP, "b", "default")
        informer.relist()
    reset_client()
    rows = {row.name: row for row in Widget.objects.all()}
    assert rows["a"].labels == {"tier": "gold"}
    assert rows["a"].deleted_at is None
    assert rows["b"].deleted_at is not None
