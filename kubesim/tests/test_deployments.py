"""Deployments and ReplicaSets as kube-controller-manager runs them, driven by the real kubectl against the
secured simulator (HTTPS, a token, RBAC) with its kubelet.

Each test quotes what the Kubernetes documentation (Concepts, Workloads: Deployments, ReplicaSet; kubectl
rollout) says a cluster does. Tests that watch time pass (rollout status) run on the real clock; the others
freeze it and move it with `sim.run_until`, so the steps of a rollout are observed, not slept through.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from kubesim.kubelet import progress, rollout
from kubesim.simulator import Simulator
from kubesim.store import ADDED
from kubesim.testing import run_kubectl as kubectl

Factory = Callable[..., Simulator]


def get(sim: Simulator, *args: str) -> Any:
    return json.loads(kubectl(sim, "get", *args, "-o", "json").stdout)


def deployment(name: str = "web", replicas: int = 2, image: str = "web:1", **spec: Any) -> str:
    template_annotations = spec.pop("template_annotations", {})
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": template_annotations},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
            **spec,
        },
    }
    return json.dumps(body)


@pytest.fixture
def frozen(kubesim_factory: Factory) -> Simulator:
    return kubesim_factory(https=True, auth=True, kubelet=True, frozen_clock=True)


@pytest.fixture
def live(kubesim_factory: Factory) -> Simulator:
    sim = kubesim_factory(https=True, auth=True, kubelet=True)
    sim.kubelet.settings.start_delay = 0.2
    return sim


def replica_sets(sim: Simulator) -> list[dict[str, Any]]:
    found = sim.store.list("replicasets.apps", "default")["items"]
    return sorted(found, key=lambda rs: rollout.revision(rs))


def rolled_out(sim: Simulator, name: str = "web") -> Callable[[], bool]:
    """kubectl rollout status's test: the newest generation observed, every replica updated and available."""

    def done() -> bool:
        found = sim.store.get("deployments.apps", name, "default")
        status, spec = found.get("status") or {}, found["spec"]
        return (
            status.get("observedGeneration", 0) >= found["metadata"]["generation"]
            and status.get("updatedReplicas", 0) == spec["replicas"]
            and status.get("replicas", 0) == spec["replicas"]
            and status.get("availableReplicas", 0) == spec["replicas"]
        )

    return done


def images(sim: Simulator) -> list[str]:
    pods = sim.store.list("pods", "default")["items"]
    return sorted(
        p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")
    )


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found = progress.get_condition(obj.get("status") or {}, kind)
    assert found is not None, f"no {kind} condition: {obj.get('status')}"
    return found


def test_a_deployment_runs_its_pods_through_a_replica_set(live: Simulator) -> None:
    """ "A Deployment provides declarative updates for Pods and ReplicaSets": the ReplicaSet is named
    `[DEPLOYMENT-NAME]-[HASH]`, "the pod-template-hash label is added by the Deployment controller to every
    ReplicaSet that a Deployment creates or adopts", and its pods are `[REPLICASET-NAME]-[5 chars]`."""
    kubectl(live, "create", "deployment", "web", "--image=web:1", "--replicas=2")
    status = kubectl(live, "rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in status.stdout
    (rs,) = get(live, "replicasets")["items"]
    pod_hash = rs["metadata"]["labels"][rollout.POD_TEMPLATE_HASH]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",
        "deployment.kubernetes.io/revision": "1",
    }
    assert [(r["kind"], r["name"], r["controller"]) for r in rs["metadata"]["ownerReferences"]] == [
        ("Deployment", "web", True)
    ]
    assert rs["status"] == {
        "replicas": 2,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "observedGeneration": 1,
    }
    for pod in get(live, "pods", "-l", "app=web")["items"]:
        assert pod["metadata"]["name"].startswith(f"web-{pod_hash}-")
        assert [(r["kind"], r["name"]) for r in pod["metadata"]["ownerReferences"]] == [
            ("ReplicaSet", rs["metadata"]["name"])
        ]
    web = get(live, "deployment", "web")
    assert web["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert {k: v for k, v in web["status"].items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
    }
    assert [(c["type"], c["status"], c["reason"]) for c in web["status"]["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable"),
        ("Progressing", "True", "NewReplicaSetAvailable"),
    ]
    assert (
        condition(web, "Progressing")["message"]
        == f'ReplicaSet "web-{pod_hash}" has successfully progressed.'
    )
    columns = kubectl(live, "get", "rs").stdout.split("\n")[1].split()
    assert columns[:4] == [f"web-{pod_hash}", "2", "2", "2"]


def test_rollout_status_fails_once_the_progress_deadline_passes(live: Simulator) -> None:
    """ "Kubernetes marks a Deployment as failed to progress [...] type: Progressing, status: "False",
    reason: ProgressDeadlineExceeded" once `.spec.progressDeadlineSeconds` pass without progress, and
    "kubectl rollout status returns a non-zero exit code if the Deployment has exceeded the progression
    deadline"."""
    stuck = deployment(
        "stuck",
        replicas=1,
        progressDeadlineSeconds=2,
        template_annotations={"kubesim.argoml.io/script": '{"*": {"waiting": "ImagePullBackOff"}}'},
    )
    kubectl(live, "apply", "-f", "-", stdin=stuck)
    status = kubectl(live, "rollout", "status", "deployment/stuck", "--timeout=60s", check=False)
    assert status.returncode == 1
    assert 'error: deployment "stuck" exceeded its progress deadline' in status.stderr
    found = get(live, "deployment", "stuck")
    progressing = condition(found, "Progressing")
    (rs,) = replica_sets(live)
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    assert (condition(found, "Available")["status"], found["status"]["unavailableReplicas"]) == ("False", 1)


def test_a_paused_deployment_rolls_out_only_once_resumed(frozen: Simulator) -> None:
    """ "You can pause rollouts for a Deployment before triggering one or more updates and then resume it
    [...] The initial state of the Deployment prior to pausing its rollout will continue its function, but
    new updates to the Deployment will not have any effect as long as the Deployment rollout is paused.\" """
    kubectl(frozen, "apply", "-f", "-", stdin=deployment())
    assert frozen.run_until(rolled_out(frozen), within=60)
    assert "deployment.apps/web paused" in kubectl(frozen, "rollout", "pause", "deployment/web").stdout
    kubectl(frozen, "set", "image", "deployment/web", "main=web:2")
    frozen.advance(120)
    assert len(replica_sets(frozen)) == 1
    assert images(frozen) == ["web:1", "web:1"]
    paused = condition(frozen.store.get("deployments.apps", "web", "default"), "Progressing")
    assert (paused["status"], paused["reason"], paused["message"]) == (
        "Unknown",
        "DeploymentPaused",
        "Deployment is paused",
    )
    kubectl(frozen, "scale", "deployment/web", "--replicas=3")  # a paused Deployment still scales
    assert frozen.run_until(lambda: images(frozen) == ["web:1"] * 3, within=60)
    kubectl(frozen, "rollout", "resume", "deployment/web")
    assert frozen.run_until(rolled_out(frozen), within=120)
    assert images(frozen) == ["web:2"] * 3
    assert [rollout.revision(rs) for rs in replica_sets(frozen)] == [1, 2]
    resumed = condition(frozen.store.get("deployments.apps", "web", "default"), "Progressing")
    assert resumed["reason"] == "NewReplicaSetAvailable"


def test_rollout_history_and_undo_go_through_the_replica_sets(frozen: Simulator) -> None:
    """ "kubectl rollout history deployment/nginx-deployment" lists REVISION and CHANGE-CAUSE ("copied from
    the Deployment annotation kubernetes.io/change-cause to its revisions upon creation"); "kubectl rollout
    undo deployment/nginx-deployment" rolls back to the previous revision, which becomes the newest."""
    kubectl(frozen, "apply", "-f", "-", stdin=deployment())
    assert frozen.run_until(rolled_out(frozen), within=60)
    kubectl(frozen, "set", "image", "deployment/web", "main=web:2")
    kubectl(frozen, "annotate", "deployment/web", "kubernetes.io/change-cause=image web:2")
    assert frozen.run_until(lambda: rolled_out(frozen)() and images(frozen) == ["web:2", "web:2"], within=120)
    history = kubectl(frozen, "rollout", "history", "deployment/web").stdout
    assert [line.split(None, 1) for line in history.strip().splitlines()[2:]] == [
        ["1", "<none>"],
        ["2", "image web:2"],
    ]
    assert "Image:\tweb:1" in kubectl(frozen, "rollout", "history", "deployment/web", "--revision=1").stdout
    first = replica_sets(frozen)[0]["metadata"]["name"]
    assert "deployment.apps/web rolled back" in kubectl(frozen, "rollout", "undo", "deployment/web").stdout
    assert frozen.run_until(lambda: rolled_out(frozen)() and images(frozen) == ["web:1", "web:1"], within=120)
    revisions = {rs["metadata"]["name"]: rs["metadata"]["annotations"] for rs in replica_sets(frozen)}
    assert revisions[first][rollout.REVISION] == "3"
    assert revisions[first][rollout.REVISION_HISTORY] == "1"
    web = frozen.store.get("deployments.apps", "web", "default")
    assert web["metadata"]["annotations"][rollout.REVISION] == "3"
    history = kubectl(frozen, "rollout", "history", "deployment/web").stdout
    assert [line.split(None, 1)[0] for line in history.strip().splitlines()[2:]] == ["2", "3"]
    kubectl(frozen, "rollout", "restart", "deployment/web")
    assert frozen.run_until(lambda: rolled_out(frozen)() and len(replica_sets(frozen)) == 3, within=120)
    assert rollout.revision(replica_sets(frozen)[-1]) == 4


def test_a_rolling_update_stays_within_max_surge_and_max_unavailable(frozen: Simulator) -> None:
    """ "Deployment ensures that only a certain number of Pods are down while they are being updated [...]
    (maxUnavailable)" and "only a certain number of Pods are created above the desired number of Pods
    (maxSurge)": with 4 replicas, maxSurge 1 and maxUnavailable 0 there are never more than 5 pods nor fewer
    than 4 ready ones."""
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    kubectl(frozen, "apply", "-f", "-", stdin=deployment(replicas=4, strategy=rolling))
    assert frozen.run_until(rolled_out(frozen), within=60)
    seen: list[tuple[int, int]] = []

    def count(_event: str, _pod: dict[str, Any]) -> None:
        pods = [
            p
            for p in frozen.store.list("pods", "default")["items"]
            if not p["metadata"].get("deletionTimestamp")
        ]
        ready = [
            p
            for p in pods
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or []
            )
        ]
        seen.append((len(pods), len(ready)))

    watching = frozen.store.subscribe(count, resource="pods")
    kubectl(frozen, "set", "image", "deployment/web", "main=web:2")
    assert frozen.run_until(lambda: rolled_out(frozen)() and images(frozen) == ["web:2"] * 4, within=300)
    watching.cancel()
    assert max(total for total, _ in seen) == 5
    assert min(ready for _, ready in seen) == 4
    old = replica_sets(frozen)[0]
    assert (old["spec"]["replicas"], old["status"]["replicas"]) == (0, 0)


def test_recreate_starts_new_pods_only_once_the_old_ones_are_gone(frozen: Simulator) -> None:
    """ ".spec.strategy.type==Recreate [...] All existing Pods are killed before new ones are created" and
    "Pods of the new revision are created only after all old Pods are terminated"."""
    kubectl(frozen, "apply", "-f", "-", stdin=deployment(replicas=2, strategy={"type": "Recreate"}))
    assert frozen.run_until(rolled_out(frozen), within=60)
    overlaps: list[list[str]] = []

    def check(event: str, pod: dict[str, Any]) -> None:
        if event == ADDED and pod["spec"]["containers"][0]["image"] == "web:2":
            old = [
                p["metadata"]["name"]
                for p in frozen.store.list("pods", "default")["items"]
                if p["spec"]["containers"][0]["image"] == "web:1"
            ]
            overlaps.append(old)

    watching = frozen.store.subscribe(check, resource="pods")
    kubectl(frozen, "set", "image", "deployment/web", "main=web:2")
    assert frozen.run_until(lambda: rolled_out(frozen)() and images(frozen) == ["web:2", "web:2"], within=300)
    watching.cancel()
    assert overlaps == [[], []]


def test_old_replica_sets_beyond_the_revision_history_limit_are_deleted(frozen: Simulator) -> None:
    """ "You can set .spec.revisionHistoryLimit field in a Deployment to specify how many old ReplicaSets
    for this Deployment you want to retain. The rest will be garbage-collected in the background.\" """
    kubectl(frozen, "apply", "-f", "-", stdin=deployment(revisionHistoryLimit=1))
    for image in ("web:2", "web:3", "web:4"):
        assert frozen.run_until(rolled_out(frozen), within=120)
        kubectl(frozen, "set", "image", "deployment/web", f"main={image}")
    assert frozen.run_until(lambda: rolled_out(frozen)() and len(replica_sets(frozen)) == 2, within=300)
    assert [rollout.revision(rs) for rs in replica_sets(frozen)] == [3, 4]


def test_a_replica_set_keeps_its_replicas_and_adopts_matching_orphans(frozen: Simulator) -> None:
    """ "A ReplicaSet's purpose is to maintain a stable set of replica Pods running at any given time": it
    creates pods to reach `replicas`, replaces deleted ones, and "if there is a Pod that has no
    OwnerReference [...] and it matches a ReplicaSet's selector, it will be immediately acquired by said
    ReplicaSet" (and, being one too many, deleted)."""
    cache = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "cache"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"tier": "cache"}},
            "template": {
                "metadata": {"labels": {"tier": "cache"}},
                "spec": {"containers": [{"name": "c", "image": "redis"}]},
            },
        },
    }
    kubectl(frozen, "apply", "-f", "-", stdin=json.dumps(cache))

    def ready(count: int) -> Callable[[], bool]:
        return (
            lambda: (frozen.store.get("replicasets.apps", "cache", "default").get("status") or {}).get(
                "readyReplicas"
            )
            == count
        )

    assert frozen.run_until(ready(2), within=60)
    kubectl(frozen, "scale", "replicaset/cache", "--replicas=3")
    assert frozen.run_until(ready(3), within=60)
    victim = get(frozen, "pods", "-l", "tier=cache")["items"][0]["metadata"]["name"]
    kubectl(frozen, "delete", "pod", victim, "--wait=false")
    assert frozen.run_until(
        lambda: ready(3)() and not frozen.store.exists("pods", victim, "default"), within=60
    )
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"tier": "cache"}},
        "spec": {"containers": [{"name": "c", "image": "redis"}]},
    }
    kubectl(frozen, "apply", "-f", "-", stdin=json.dumps(orphan))
    frozen.store.wait_idle()
    assert not frozen.store.exists(
        "pods", "stray", "default"
    )  # adopted, then the surplus pod (unscheduled) went
    assert len(get(frozen, "pods", "-l", "tier=cache")["items"]) == 3


def test_a_pod_the_namespace_refuses_fails_the_replica_set_and_the_deployment(frozen: Simulator) -> None:
    """A ReplicaSet that cannot create pods reports `ReplicaFailure` (reason FailedCreate, the apiserver's
    message), and its Deployment shows the same condition (Deployments: "Failed Deployment")."""
    kubectl(frozen, "label", "namespace", "default", "pod-security.kubernetes.io/enforce=restricted")
    kubectl(frozen, "apply", "-f", "-", stdin=deployment(replicas=1))
    frozen.advance(5)
    (rs,) = replica_sets(frozen)
    failure = condition(rs, "ReplicaFailure")
    assert (failure["status"], failure["reason"]) == ("True", "FailedCreate")
    assert 'violates PodSecurity "restricted:latest"' in failure["message"]
    copied = condition(frozen.store.get("deployments.apps", "web", "default"), "ReplicaFailure")
    assert (copied["reason"], copied["message"]) == ("FailedCreate", failure["message"])


def test_deleting_a_deployment_deletes_its_replica_sets_and_pods(frozen: Simulator) -> None:
    """ReplicaSets are owned by their Deployment and pods by their ReplicaSet, so the garbage collector
    removes them all ("kubectl delete deployment" cascades in the background)."""
    kubectl(frozen, "apply", "-f", "-", stdin=deployment())
    assert frozen.run_until(rolled_out(frozen), within=60)
    kubectl(frozen, "delete", "deployment", "web", "--wait=false")
    assert frozen.run_until(lambda: not frozen.store.list("pods", "default")["items"], within=120)
    assert replica_sets(frozen) == []
