"""Events land on our resources as events.k8s.io/v1 Events; repeats become a series, floods are dropped.

Against kubesim over HTTP, with the recorder's clocks injected so time-based behaviour needs no sleeping.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

import pytest

from kube import events as events_module
from kube.client import get_client, reset_client
from kube.events import MAX_NOTE_BYTES, EventRecorder, event_name, recorder_for, truncate_note
from kube.resources import EVENT, NAMESPACE
from kubesim.testing import running_simulator

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Clocks:
    """A monotonic clock and a wall clock that move together, only when told."""

    def __init__(self) -> None:
        self.seconds = 1000.0
        self.start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.seconds

    def wall(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds - 1000.0)

    def advance(self, seconds: float) -> None:
        self.seconds += seconds


@pytest.fixture(scope="module")
def simulator():
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture
def client(simulator, settings):
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    yield get_client()
    reset_client()


@pytest.fixture
def clocks():
    return Clocks()


@pytest.fixture
def namespace(client, request):
    """A namespace of this test's own, so the module's shared simulator never mixes tests' events."""
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-")
    client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def recorder(client, clocks):
    return EventRecorder(
        "tfjob",
        client=client,
        instance="tfjob-worker-1",
        burst=3,
        refill_seconds=60,
        series_window=360,
        series_flush_seconds=30,
        clock=clocks.monotonic,
        wall_clock=clocks.wall,
    )


def job(namespace: str, name: str = "mnist") -> dict:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "42"},
    }


def events(client, namespace: str) -> list[dict]:
    return client.list(EVENT, namespace)["items"]


def test_an_event_names_its_object_reason_action_and_reporting_controller(client, recorder, namespace):
    assert recorder.normal(
        job(namespace), "SuccessfulCreatePod", "Created pod mnist-worker-0", action="Create"
    )
    [event] = events(client, namespace)
    assert event["regarding"] == {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "namespace": namespace,
        "name": "mnist",
        "uid": "uid-mnist",
        "resourceVersion": "42",
    }
    assert (event["type"], event["reason"], event["action"]) == ("Normal", "SuccessfulCreatePod", "Create")
    assert event["note"] == "Created pod mnist-worker-0"
    assert (event["reportingController"], event["reportingInstance"]) == ("argoml.io/tfjob", "tfjob-worker-1")
    assert MICRO_TIME.match(event["eventTime"])
    assert event["metadata"]["name"].startswith("mnist.")
    assert "series" not in event


def test_a_repeated_event_becomes_one_event_whose_series_counts_the_repeats(
    client, simulator, recorder, clocks, namespace
):
    simulator.counters.reset()
    for _ in range(5):
        recorder.warning(job(namespace), "BackOff", "Restarting failed pod mnist-worker-1", action="Restart")
        clocks.advance(1)
    [event] = events(client, namespace)
    assert event["series"]["count"] == 2  # written on the first repeat, the rest are counted in memory
    assert simulator.counters.count(verb="create", resource="events.events.k8s.io") == 1
    assert simulator.counters.count(verb="patch", resource="events.events.k8s.io") == 1

    recorder.flush()
    [event] = events(client, namespace)
    assert event["series"] == {"count": 5, "lastObservedTime": "2026-03-01T12:00:04.000000Z"}


def test_a_repeat_after_the_flush_interval_writes_the_count_by_itself(client, recorder, clocks, namespace):
    for _ in range(3):
        recorder.warning(job(namespace), "BackOff", "again", action="Restart")
    clocks.advance(31)
    recorder.warning(job(namespace), "BackOff", "again", action="Restart")
    [event] = events(client, namespace)
    assert event["series"]["count"] == 4


def test_a_flood_of_different_events_for_one_object_and_reason_is_cut_by_the_token_bucket(
    client, recorder, clocks, namespace
):
    recorded = [
        recorder.normal(
            job(namespace), "SuccessfulCreatePod", f"Created pod mnist-worker-{i}", action="Create"
        )
        for i in range(5)
    ]
    assert recorded == [True, True, True, False, False]
    assert recorder.dropped == 2
    assert recorder.normal(job(namespace), "SuccessfulCreateService", "Created a service", action="Create")
    assert recorder.normal(
        job(namespace, "other"), "SuccessfulCreatePod", "Created pod other-0", action="Create"
    )

    clocks.advance(60)  # one token back
    assert recorder.normal(
        job(namespace), "SuccessfulCreatePod", "Created pod mnist-worker-9", action="Create"
    )
    assert not recorder.normal(
        job(namespace), "SuccessfulCreatePod", "Created pod mnist-worker-10", action="Create"
    )
    assert len(events(client, namespace)) == 6


def test_the_same_event_after_the_series_window_is_a_new_event(client, recorder, clocks, namespace):
    recorder.normal(job(namespace), "Suspended", "Job suspended", action="Suspend")
    clocks.advance(361)
    recorder.normal(job(namespace), "Suspended", "Job suspended", action="Suspend")
    assert [event.get("series") for event in events(client, namespace)] == [None, None]


def test_a_repeat_of_an_expired_event_creates_it_again_with_its_series(client, recorder, namespace):
    recorder.warning(job(namespace), "FailedValidation", "spec.tfReplicaSpecs: required", action="Validate")
    [first] = events(client, namespace)
    client.delete(EVENT, first["metadata"]["name"], namespace)
    recorder.warning(job(namespace), "FailedValidation", "spec.tfReplicaSpecs: required", action="Validate")
    [again] = events(client, namespace)
    assert again["metadata"]["name"] != first["metadata"]["name"]
    assert again["series"]["count"] == 2
    assert again["note"] == "spec.tfReplicaSpecs: required"


def test_a_failure_to_write_an_event_is_logged_and_never_raised(recorder, caplog):
    missing = job("no-such-namespace")
    assert recorder.normal(missing, "Created", "x", action="Create") is True
    assert "could not record event Created" in caplog.text


def test_notes_longer_than_the_api_allows_are_cut_on_a_character_boundary():
    note = truncate_note("é" * 1000)
    assert len(note.encode()) <= MAX_NOTE_BYTES
    assert note.endswith("...")
    assert truncate_note("short") == "short"


def test_event_names_fit_the_253_characters_a_name_may_have():
    name = event_name("x" * 253, 0x17E3A1B2C3D4E5F6)
    assert len(name) == 253
    assert name.endswith(".17e3a1b2c3d4e5f6")


def test_a_bad_type_reason_or_object_is_refused_by_name(recorder, namespace):
    with pytest.raises(ValueError, match="type must be Normal or Warning"):
        recorder.event(job(namespace), "Info", "Created", "x", action="Create")
    with pytest.raises(ValueError, match="reason must be 1 to 128 characters"):
        recorder.normal(job(namespace), "", "x", action="Create")
    with pytest.raises(ValueError, match="regarding: the object must have kind"):
        recorder.normal({"metadata": {"name": "x"}}, "Created", "x", action="Create")
    with pytest.raises(ValueError, match="controller must be lowercase"):
        EventRecorder("TFJob")


def test_each_controller_has_one_recorder_per_process():
    assert recorder_for("hpw") is recorder_for("hpw")
    assert recorder_for("hpw") is not recorder_for("tb")
    assert recorder_for("tb").reporting_controller == "argoml.io/tb"


def test_flush_all_writes_every_recorders_pending_repeat_counts(monkeypatch):
    flushed = []
    monkeypatch.setattr(
        events_module, "_recorders", {"a": _FlushProbe("a", flushed), "b": _FlushProbe("b", flushed)}
    )
    monkeypatch.setattr(events_module, "_recorders_pid", os.getpid())
    events_module.flush_all()
    assert sorted(flushed) == ["a", "b"]


class _FlushProbe:
    def __init__(self, name, flushed):
        self.name, self.flushed = name, flushed

    def flush(self):
        self.flushed.append(self.name)
