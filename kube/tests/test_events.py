"""Events land on our resources as events.k8s.io/v1 Events (or, for a recorder made for them, as client-go's
core v1 Events); repeats become a series, floods are dropped.

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
from kube.resources import CORE_EVENT, EVENT, NAMESPACE
from kubesim.testing import running_simulator

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
CORE_NAME = re.compile(r"^mnist\.[0-9a-f]+$")


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
    flushed: list[str] = []
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


# -- core v1 Events, as client-go's `record` package writes them ----------------------------------------


@pytest.fixture
def core_recorder(client, clocks):
    return EventRecorder(
        "trainer",
        api=CORE_EVENT,
        client=client,
        instance="trainer-worker-1",
        burst=3,
        refill_seconds=60,
        series_window=360,
        series_flush_seconds=30,
        clock=clocks.monotonic,
        wall_clock=clocks.wall,
    )


def train_job(namespace: str) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "mnist", "namespace": namespace, "uid": "uid-mnist", "resourceVersion": "7"},
    }


def core_events(client, namespace: str) -> list[dict]:
    return client.list(CORE_EVENT, namespace)["items"]


def test_a_core_event_has_the_fields_client_gos_recorder_writes(client, core_recorder, namespace):
    assert core_recorder.normal(
        train_job(namespace), "SuccessfulCreatePod", "Created pod: mnist-node-0-0", action="Create"
    )
    [event] = core_events(client, namespace)
    assert event["involvedObject"] == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "namespace": namespace,
        "name": "mnist",
        "uid": "uid-mnist",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal", "SuccessfulCreatePod", "Created pod: mnist-node-0-0"
    )  # fmt: skip
    assert event["source"] == {"component": "argoml.io/trainer"}
    assert (event["reportingComponent"], event["reportingInstance"]) == (
        "argoml.io/trainer",
        "trainer-worker-1",
    )
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-03-01T12:00:00Z"
    assert event["count"] == 1
    assert CORE_NAME.match(event["metadata"]["name"])
    assert event["metadata"]["namespace"] == namespace
    assert "eventTime" not in event
    assert "series" not in event
    # The same object through events.k8s.io, as a real API server serves it.
    [newer] = events(client, namespace)
    assert newer["deprecatedFirstTimestamp"] == "2026-03-01T12:00:00Z"
    assert newer["regarding"]["name"] == "mnist"


def test_a_repeated_core_event_patches_its_count_and_last_timestamp(
    client, simulator, core_recorder, clocks, namespace
):
    simulator.counters.reset()
    for _ in range(5):
        core_recorder.warning(train_job(namespace), "BackOff", "Restarting mnist-node-0-0", action="Restart")
        clocks.advance(1)
    [event] = core_events(client, namespace)
    assert (event["count"], event["lastTimestamp"]) == (2, "2026-03-01T12:00:01Z")
    assert event["firstTimestamp"] == "2026-03-01T12:00:00Z"
    writes = [
        simulator.counters.count(verb=verb, resource=resource)
        for verb in ("create", "patch")
        for resource in ("events", "events.events.k8s.io")
    ]
    assert sum(writes) == 2  # one create, one patch: the other repeats are counted in memory

    core_recorder.flush()
    [event] = core_events(client, namespace)
    assert (event["count"], event["lastTimestamp"]) == (5, "2026-03-01T12:00:04Z")
    assert "series" not in event


def test_a_repeat_of_an_expired_core_event_creates_it_again_with_its_count(client, core_recorder, namespace):
    core_recorder.warning(train_job(namespace), "FailedCreatePod", "quota exceeded", action="Create")
    [first] = core_events(client, namespace)
    client.delete(CORE_EVENT, first["metadata"]["name"], namespace)
    core_recorder.warning(train_job(namespace), "FailedCreatePod", "quota exceeded", action="Create")
    [again] = core_events(client, namespace)
    assert again["metadata"]["name"] != first["metadata"]["name"]
    assert again["count"] == 2
    assert again["firstTimestamp"] == first["firstTimestamp"]
    assert again["message"] == "quota exceeded"


def test_core_events_pass_the_same_spam_filter(client, core_recorder, namespace):
    recorded = [
        core_recorder.normal(train_job(namespace), "SuccessfulCreatePod", f"Created pod {i}", action="Create")
        for i in range(5)
    ]
    assert recorded == [True, True, True, False, False]
    assert len(core_events(client, namespace)) == 3


def test_the_series_patch_says_the_count_in_the_shape_of_each_api():
    moment = datetime(2026, 3, 1, 12, 0, 9, 250000, tzinfo=UTC)
    core = EventRecorder("trainer", api=CORE_EVENT, client=object())  # type: ignore[arg-type]
    newer = EventRecorder("trainer", client=object())  # type: ignore[arg-type]
    assert core.series_patch(3, moment) == {"count": 3, "lastTimestamp": "2026-03-01T12:00:09Z"}
    assert newer.series_patch(3, moment) == {
        "series": {"count": 3, "lastObservedTime": "2026-03-01T12:00:09.250000Z"}
    }


def test_a_recorder_writes_through_one_of_the_two_event_apis():
    assert recorder_for("trainer", CORE_EVENT) is recorder_for("trainer", CORE_EVENT)
    assert recorder_for("trainer", CORE_EVENT) is not recorder_for("trainer")
    assert recorder_for("trainer", CORE_EVENT).api is CORE_EVENT
    assert recorder_for("trainer").api is EVENT
    with pytest.raises(ValueError, match="api must be"):
        EventRecorder("trainer", api=NAMESPACE)
