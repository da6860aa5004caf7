"""Controller registration and the runtime in one process: events of kubesim objects become reconcile keys."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.exceptions import ImproperlyConfigured

from kube.controller import runtime
from kube.controller.conf import RuntimeConf
from kube.controller.expectations import created, deleted, version
from kube.controller.keysink import KeySink
from kube.controller.queue import ObjectKey, Registry
from kube.controller.registry import Controller, ControllerRegistry, Owns
from kube.controller.runtime import ControllerRuntime, WatchSpec, plan_watches
from kube.resources import CONFIGMAP, DEPLOYMENT, NAMESPACE, POD, SECRET, WORKFLOW, ResourceType
from kube.tests.controller_harness import NAMESPACE as TEST_NAMESPACE
from kube.tests.controller_harness import client_for, configmap
from kube.tests.queue_harness import wait_for
from kubesim.testing import running_simulator

TFJOB = ResourceType("argoml.io/v1alpha1", "TFJob", "tfjobs")


def reconcile_nothing(namespace: str, name: str) -> None:
    """The reconcile of the controllers these tests register: they look at what is watched."""


def registry_of_this_test() -> ControllerRegistry:
    """A registry of only what the test registers, with a reconcilers' table of its own."""
    registry = ControllerRegistry(Registry(discover_apps=False))
    registry._discovered = True
    return registry


def owner_reference(kind: str, name: str, *, api_version: str = "v1", controller: bool = True) -> dict:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


def child(name: str, *references: dict, labels: dict | None = None, namespace: str = "ns") -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": list(references),
                         "labels": labels or {}}}  # fmt: skip


# -- mapping events to keys (pure) ------------------------------------------------------------------------
def test_a_child_event_reconciles_the_owner_named_by_its_controller_reference():
    controller = Controller(TFJOB, owns=(Owns(POD),))
    pod = child(
        "job-worker-0",
        owner_reference("TFJob", "other", api_version="argoml.io/v1alpha1", controller=False),
        owner_reference("TFJob", "job", api_version="argoml.io/v1alpha1"),
    )
    assert controller.owner_keys(Owns(POD), pod) == [ObjectKey("TFJob", "ns", "job")]


@pytest.mark.parametrize(
    "reference",
    [
        owner_reference("MXJob", "job", api_version="argoml.io/v1alpha1"),
        owner_reference("TFJob", "job", api_version="kubeflow.org/v1"),
    ],
    ids=["another kind", "another group"],
)
def test_a_child_controlled_by_something_else_reconciles_nothing(reference):
    controller = Controller(TFJOB, owns=(Owns(POD),))
    assert controller.owner_keys(Owns(POD), child("pod", reference)) == []


def test_one_kind_in_two_groups_is_two_controllers_whose_keys_name_the_group():
    kubeflow_tfjob = ResourceType("kubeflow.org/v1", "TFJob", "tfjobs")
    ours = Controller(TFJOB, owns=(Owns(POD),))
    theirs = Controller(kubeflow_tfjob, owns=(Owns(POD),), name="TFJob.kubeflow.org")
    pod = child("job-worker-0", owner_reference("TFJob", "job", api_version="kubeflow.org/v1"))
    assert ours.owner_keys(Owns(POD), pod) == []
    assert theirs.owner_keys(Owns(POD), pod) == [ObjectKey("TFJob.kubeflow.org", "ns", "job")]
    assert theirs.own_key({"metadata": {"name": "job", "namespace": "ns"}}).controller == "tfjob.kubeflow.org"
    registry = registry_of_this_test()
    registry.register(TFJOB, reconcile_nothing)
    registry.register(kubeflow_tfjob, reconcile_nothing, name="TFJob.kubeflow.org")
    assert [c.kind for c in registry.controllers()] == ["TFJob", "TFJob.kubeflow.org"]


def test_a_controller_name_must_be_its_kind_with_or_without_its_group():
    with pytest.raises(ValueError, match=r"name: must be 'TFJob' or 'TFJob\.argoml\.io'"):
        Controller(TFJOB, name="TFJob.kubeflow.org")


def test_an_owner_label_maps_a_child_to_its_owner_without_owner_references():
    pods = Owns(POD, owner_label="workflows.argoproj.io/workflow")
    controller = Controller(WORKFLOW, owns=(pods,))
    labelled = child("step-1", labels={"workflows.argoproj.io/workflow": "wf"})
    assert controller.owner_keys(pods, labelled) == [ObjectKey("Workflow", "ns", "wf")]
    assert controller.owner_keys(pods, child("stray")) == []


def configmap_owner(obj: dict) -> str | None:
    return (obj.get("data") or {}).get("owner")


def test_an_owner_name_function_maps_a_child_by_a_reference_in_its_content():
    maps = Owns(CONFIGMAP, owner_name=configmap_owner)
    controller = Controller(DEPLOYMENT, owns=(maps,))
    referring = {**child("settings"), "data": {"owner": "web"}}
    assert controller.owner_keys(maps, referring) == [ObjectKey("Deployment", "ns", "web")]
    assert controller.owner_keys(maps, child("stray")) == []
    assert controller.owner_keys(maps, {**child("odd"), "data": {"owner": "a/b"}}) == []


def test_a_cluster_scoped_owner_named_by_function_gets_a_key_without_namespace():
    maps = Owns(CONFIGMAP, owner_name=configmap_owner)
    controller = Controller(NAMESPACE, owns=(maps,))
    assert controller.owner_keys(maps, {**child("cm"), "data": {"owner": "team-a"}}) == [
        ObjectKey("Namespace", "", "team-a")
    ]


def test_owner_name_and_owner_label_exclude_each_other():
    with pytest.raises(ValueError, match="owner_name"):
        Owns(CONFIGMAP, owner_label="a", owner_name=configmap_owner)


def test_a_cluster_scoped_owner_gets_a_key_without_namespace():
    controller = Controller(NAMESPACE, owns=(Owns(CONFIGMAP),))
    assert controller.owner_keys(Owns(CONFIGMAP), child("cm", owner_reference("Namespace", "team-a"))) == [
        ObjectKey("Namespace", "", "team-a")
    ]


def test_controllers_reading_the_same_objects_share_one_informer():
    jobs = Controller(TFJOB, owns=(Owns(POD, label_selector="argoml.io/job-name"), Owns(SECRET)))
    deployments = Controller(DEPLOYMENT, owns=(Owns(POD, label_selector="argoml.io/job-name"),))
    plan = plan_watches([jobs, deployments])

    assert set(plan) == {
        WatchSpec(TFJOB),
        WatchSpec(DEPLOYMENT),
        WatchSpec(POD, label_selector="argoml.io/job-name"),
        WatchSpec(SECRET),
    }
    assert [route.controller.kind for route in plan[WatchSpec(POD, label_selector="argoml.io/job-name")]] == [
        "TFJob",
        "Deployment",
    ]


# -- registration -------------------------------------------------------------------------------------------
def test_children_are_indexed_under_every_owner_key_they_lead_back_to():
    tfjobs = Controller(TFJOB, owns=(Owns(POD),))
    mxjobs = Controller(ResourceType("argoml.io/v1alpha1", "MXJob", "mxjobs"), owns=(Owns(POD),))
    routes = plan_watches([tfjobs, mxjobs])[WatchSpec(POD)]
    owners = runtime.owner_index(routes)

    pod = child("job-worker-0", owner_reference("TFJob", "job", api_version="argoml.io/v1alpha1"))
    assert owners(pod) == [ObjectKey("TFJob", "ns", "job")]
    assert owners(child("stray")) == []


def test_an_event_shows_a_waiting_reconcile_its_child_or_its_own_write():
    controller = Controller(TFJOB, owns=(Owns(POD),))
    own, pods = runtime.Route(controller), runtime.Route(controller, Owns(POD))
    pod = child("job-worker-0")
    terminating = {"metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}

    assert runtime.observed_items(own, "MODIFIED", {"metadata": {"resourceVersion": "7"}}) == [version("7")]
    assert runtime.observed_items(own, "MODIFIED", {"metadata": {}}) == []
    assert runtime.observed_items(pods, "ADDED", pod) == [created("Pod", "job-worker-0")]
    for event, obj in (("DELETED", pod), ("MODIFIED", terminating)):
        assert deleted("Pod", "job-worker-0") in runtime.observed_items(pods, event, obj)


def test_the_event_of_a_keys_own_write_enqueues_it_only_for_a_run_held_back_meanwhile():
    controllers = ControllerRuntime(object(), [Controller(TFJOB, owns=(Owns(POD),))], enqueue=Enqueued())
    handle = controllers.informers[WatchSpec(TFJOB)].handler

    def job(name: str, resource_version: str) -> dict:
        metadata = {"name": name, "namespace": "ns", "resourceVersion": resource_version}
        return {"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob", "metadata": metadata}

    quiet, held = ObjectKey("TFJob", "ns", "quiet"), ObjectKey("TFJob", "ns", "held")
    controllers.expectations.expect(quiet, [version("7")])
    handle("MODIFIED", job("quiet", "7"))  # the status its run wrote: that run decided already
    assert controllers.sink.waiting == 0
    handle("MODIFIED", job("quiet", "8"))  # someone else's change
    assert controllers.sink.waiting == 1

    controllers.expectations.expect(held, [version("3")])
    assert controllers.expectations.waiting(held) is not None  # a run came too early and did nothing
    handle("MODIFIED", job("held", "3"))
    assert controllers.sink.waiting == 2


def test_the_children_a_run_created_enqueue_its_key_once_with_the_last_of_their_events():
    controller = Controller(TFJOB, owns=(Owns(POD),))
    controllers = ControllerRuntime(object(), [controller], enqueue=Enqueued())
    handle_pod = controllers.informers[WatchSpec(POD)].handler
    handle_job = controllers.informers[WatchSpec(TFJOB)].handler
    reference = owner_reference("TFJob", "job", api_version="argoml.io/v1alpha1")
    key = ObjectKey("TFJob", "ns", "job")
    job = {"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob",
           "metadata": {"name": "job", "namespace": "ns", "resourceVersion": "9"}}  # fmt: skip

    # The run wrote its status (version 9) and created two pods.
    controllers.expectations.expect(key, [version("9"), created("Pod", "job-0"), created("Pod", "job-1")])
    handle_pod("ADDED", child("job-0", reference))
    assert controllers.sink.waiting == 0  # job-1 still on the way: a run now would do nothing
    handle_pod("ADDED", child("job-1", reference))
    assert controllers.sink.waiting == 0  # the status write's event is still on the way too
    handle_job("MODIFIED", job)  # the last item: its own write, yet the run the pods owe goes now
    assert controllers.sink.waiting == 1
    handle_pod("MODIFIED", child("job-1", reference))  # news after that: a run, as ever
    assert len(controllers.expectations) == 0


def test_a_creation_that_failed_releases_the_key_its_siblings_held():
    controllers = ControllerRuntime(object(), [Controller(TFJOB, owns=(Owns(POD),))], enqueue=Enqueued())
    handle_pod = controllers.informers[WatchSpec(POD)].handler
    view = controllers.view("TFJob")
    assert view is not None
    key = ObjectKey("TFJob", "ns", "job")
    view.expect("ns", "job", [created("Pod", "job-0"), created("Pod", "job-1")])
    handle_pod("ADDED", child("job-0", owner_reference("TFJob", "job", api_version="argoml.io/v1alpha1")))
    assert controllers.sink.waiting == 0
    view.observe("ns", "job", created("Pod", "job-1"))  # its create failed: no event will come
    assert controllers.sink.waiting == 1
    assert controllers.expectations.take_held(key) is False


def test_a_process_that_does_not_lead_has_no_cached_view():
    assert runtime.cached_view("TFJob") is None


def test_registering_the_same_controller_twice_is_harmless_but_a_different_one_is_refused():
    registry = registry_of_this_test()
    registry.register(TFJOB, reconcile_nothing, owns=[POD])
    registry.register(TFJOB, reconcile_nothing, owns=[POD])
    with pytest.raises(ValueError, match="a different controller for kind 'TFJob'"):
        registry.register(TFJOB, reconcile_nothing, owns=[SECRET])
    assert registry.controllers() == [Controller(TFJOB, owns=(Owns(POD),))]


@pytest.mark.parametrize(
    ("owns", "message"),
    [
        ([POD, Owns(POD, label_selector="a")], "owns: Pod.v1 is listed twice"),
        ([TFJOB], "cannot own children of its own kind"),
        (["pods"], "owns: expected Owns"),
    ],
)
def test_a_malformed_registration_names_the_field(owns, message):
    with pytest.raises((ValueError, TypeError), match=message):
        registry_of_this_test().register(TFJOB, reconcile_nothing, owns=owns)


def test_one_registration_gives_the_queue_its_reconciler_and_the_leader_its_watch_unless_told_not_to():
    registry = registry_of_this_test()
    registry.register(TFJOB, reconcile_nothing, owns=[POD])
    registry.register(CONFIGMAP, reconcile_nothing, watch=False)  # reconciled, its CRD not installed here
    assert registry.reconcilers.kinds() == ["ConfigMap", "TFJob"]
    assert registry.reconcilers.lookup("ConfigMap") is reconcile_nothing
    assert [controller.kind for controller in registry.controllers()] == ["TFJob"]


def test_a_controller_without_a_reconciler_is_refused_at_start():
    widgets = ResourceType("example.io/v1", "Widget", "widgets")  # a kind no installed app reconciles
    with pytest.raises(ImproperlyConfigured, match="Controllers without a reconciler: Widget"):
        runtime.check_reconcilers([Controller(widgets)])


# -- the key sink --------------------------------------------------------------------------------------------
def test_keys_that_could_not_be_enqueued_are_retried_not_dropped():
    delivered: list[ObjectKey] = []
    attempts_while_down = []
    redis_down = threading.Event()
    redis_down.set()

    def enqueue(kind: str, namespace: str, name: str) -> None:
        if redis_down.is_set():
            attempts_while_down.append(name)
            raise ConnectionError("Redis is down")
        delivered.append(ObjectKey(kind, namespace, name))

    sink = KeySink(enqueue, retry_seconds=0.05)
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    keys = [ObjectKey("ConfigMap", "ns", f"cm-{index}") for index in range(5)]
    for key in [*keys, keys[0]]:
        sink.put(key)
    wait_for(lambda: sink.waiting == 5, 2, "the keys to wait for Redis")
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # events keep coming during the outage
        sink.put(keys[1])
    assert len(attempts_while_down) <= 0.3 / 0.05 + 2  # one attempt per retry period, not per event
    redis_down.clear()
    wait_for(lambda: len(delivered) == 5, 2, "every key to be enqueued")
    sink.stop()
    thread.join(2)
    assert delivered == keys


# -- the runtime against kubesim ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim():
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture
def client(sim):
    return client_for(sim.kubeconfig_path)


class Enqueued:
    """A stand-in for kube.controller.queue.enqueue that remembers every key."""

    def __init__(self) -> None:
        self.keys: list[ObjectKey] = []

    def __call__(self, kind: str, namespace: str, name: str) -> None:
        self.keys.append(ObjectKey(kind, namespace, name))


def sample_controller(mirrored: list) -> Controller:
    return Controller(
        CONFIGMAP,
        owns=(Owns(SECRET, label_selector="sample.argoml.io/owner"),),
        mirror=lambda event_type, obj: mirrored.append((event_type, obj["metadata"]["name"])),
        label_selector="sample.argoml.io/enabled=true",
        namespace=TEST_NAMESPACE,
    )


def secret(name: str, owner: dict, **labels: str) -> dict:
    metadata = {"name": name, "namespace": TEST_NAMESPACE, "labels": labels}
    metadata["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
         "uid": owner["metadata"]["uid"], "controller": True}
    ]  # fmt: skip
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {}}


def test_events_of_the_kind_and_of_its_children_become_keys_of_the_owner(client):
    mirrored: list = []
    enqueued = Enqueued()
    controllers = ControllerRuntime(client, [sample_controller(mirrored)], enqueue=enqueued)
    existing = client.create(CONFIGMAP, configmap("existing", **{"sample.argoml.io/enabled": "true"}))
    client.create(CONFIGMAP, configmap("not-ours"))
    controllers.start()
    try:
        assert controllers.wait_synced(5)
        wait_for(
            lambda: enqueued.keys == [ObjectKey("ConfigMap", "default", "existing")], 2, "the listed key"
        )
        client.create(SECRET, secret("existing-copy", existing, **{"sample.argoml.io/owner": "existing"}))
        client.create(SECRET, secret("unlabelled", existing))  # outside the child informer's selector
        wait_for(lambda: len(enqueued.keys) == 2, 2, "the child's key")
        # One at a time: the sink sends a key waiting twice once (the child's and the update's could merge).
        client.patch(CONFIGMAP, "existing", {"data": {"a": "1"}}, TEST_NAMESPACE)
        wait_for(lambda: len(enqueued.keys) == 3, 2, "the update's key")

        assert set(enqueued.keys) == {ObjectKey("ConfigMap", "default", "existing")}
        assert controllers.mirror_writer.wait_idle(5)
        assert mirrored == [("ADDED", "existing"), ("MODIFIED", "existing")]
        secrets = controllers.informers[WatchSpec(SECRET, TEST_NAMESPACE, "sample.argoml.io/owner")]
        assert secrets.cached_keys() == [("default", "existing-copy")]
        assert sorted(controllers.known_keys()) == [ObjectKey("ConfigMap", "default", "existing")]
    finally:
        controllers.stop()
        controllers.join(5)


def test_once_stopped_no_event_is_enqueued(client):
    enqueued = Enqueued()
    controllers = ControllerRuntime(client, [sample_controller([])], enqueue=enqueued)
    controllers.start()
    assert controllers.wait_synced(5)
    controllers.stop()
    before = list(enqueued.keys)
    client.create(CONFIGMAP, configmap("after-stop", **{"sample.argoml.io/enabled": "true"}))
    controllers.join(2)
    assert enqueued.keys == before


def test_resync_enqueues_every_object_by_listing_when_this_process_does_not_lead(client, monkeypatch):
    registry = registry_of_this_test()
    registry.register(CONFIGMAP, reconcile_nothing, label_selector="resync=yes", namespace=TEST_NAMESPACE)
    for index in range(7):
        client.create(CONFIGMAP, configmap(f"resync-{index}", resync="yes"))
    monkeypatch.setattr(runtime, "registry", registry)
    monkeypatch.setattr(runtime, "get_client", lambda: client)
    monkeypatch.setattr(runtime, "runtime_conf_from_settings", lambda: RuntimeConf(page_size=3))
    enqueued = Enqueued()

    assert runtime.resync_all(enqueue=enqueued) == 7
    assert sorted(key.name for key in enqueued.keys) == [f"resync-{index}" for index in range(7)]


def test_resync_reads_the_informer_caches_when_this_process_leads(sim, client, monkeypatch):
    leading = ControllerRuntime(client, [sample_controller([])], enqueue=Enqueued())
    leading.start()
    try:
        assert leading.wait_synced(5)
        manager = type("Manager", (), {"runtime": leading})()
        monkeypatch.setattr(runtime, "_active_manager", manager)
        lists_before = sim.counters.count(verb="list")
        enqueued = Enqueued()

        count = runtime.resync_all(enqueue=enqueued)
        assert count == len(enqueued.keys) == len(list(leading.known_keys())) > 0
        assert sim.counters.count(verb="list") == lists_before
    finally:
        leading.stop()


@pytest.mark.django_db
def test_the_resync_is_scheduled_every_ten_minutes_by_a_migration():
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.get(name="kube.resync_all")
    assert (task.task, task.queue, task.enabled) == ("kube.resync_all", "default", True)
    assert (task.interval.every, task.interval.period) == (600, "seconds")


def test_a_kind_watched_only_to_be_read_is_found_by_key_and_leads_to_no_owner(sim, client):
    """As the TrainJob controller reads its runtimes: an Owns whose objects reference no owner."""
    client.create(CONFIGMAP, configmap("read-only"))
    controller = Controller(DEPLOYMENT, (Owns(CONFIGMAP), Owns(NAMESPACE)), namespace=TEST_NAMESPACE)
    leading = ControllerRuntime(client, [controller], enqueue=Enqueued())
    for informer in leading.informers.values():  # listed here, not by watch threads: nothing is sent on
        informer.relist()
    view = leading.view("Deployment")
    assert view is not None
    assert view.lookup("ConfigMap", TEST_NAMESPACE, "read-only")["metadata"]["name"] == "read-only"
    assert view.lookup("Namespace", "", TEST_NAMESPACE)["metadata"]["name"] == TEST_NAMESPACE
    assert view.lookup("ConfigMap", TEST_NAMESPACE, "missing") is None
    assert view.lookup("Secret", TEST_NAMESPACE, "read-only") is None  # not a watched kind
    assert leading.sink.waiting == 0  # no key was put on the way to the queue
