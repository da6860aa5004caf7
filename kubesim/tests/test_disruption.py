"""Cordon, drain, evictions and PodDisruptionBudgets, driven by the real kubectl against the secured
simulator, and the disruption controller's and the eviction subresource's rules (pure, no cluster).

The scenarios quote the Kubernetes documentation (Tasks, Administer a Cluster: Safely Drain a Node; API
Eviction; Specifying a Disruption Budget for your Application) and kubectl's reference.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from kubesim.errors import ApiError
from kubesim.kubelet import disruption, eviction
from kubesim.simulator import Simulator
from kubesim.testing import run_kubectl as kubectl

Factory = Callable[..., Simulator]
STAMP = "2026-01-01T12:00:00Z"
NOW = 1767268800.0  # STAMP as epoch seconds


def web(replicas: int, *, volumes: bool = False) -> str:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "web:1"}]}
    if volumes:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec},
            },
        }
    )


def budget(**spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        }
    )


def running_pods(sim: Simulator, node: str | None = None) -> list[dict[str, Any]]:
    pods = sim.store.list("pods", "default", label_selector="app=web")["items"]
    return [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
        and (node is None or p["spec"].get("nodeName") == node)
    ]


def budget_status(sim: Simulator) -> dict[str, Any]:
    return dict(sim.store.get(disruption.BUDGETS, "web", "default").get("status") or {})


@pytest.fixture
def frozen(kubesim_factory: Factory) -> Simulator:
    return kubesim_factory(https=True, auth=True, kubelet=True, frozen_clock=True)


@pytest.fixture
def live(kubesim_factory: Factory) -> Simulator:
    sim = kubesim_factory(https=True, auth=True, kubelet=True)
    sim.kubelet.settings.start_delay = 0.2
    return sim


# --- through kubectl ---------------------------------------------------------------------------------------


def test_a_cordoned_node_takes_no_new_pods_until_uncordoned(frozen: Simulator) -> None:
    """ "kubectl cordon my-node # Mark my-node as unschedulable": `spec.unschedulable`, shown as
    `Ready,SchedulingDisabled`; the scheduler leaves a new pod Pending (PodScheduled False, Unschedulable)
    until `kubectl uncordon` makes the node schedulable again."""
    assert "node/kubesim-node cordoned" in kubectl(frozen, "cordon", "kubesim-node").stdout
    node = frozen.store.get("nodes", "kubesim-node")
    assert node["spec"]["unschedulable"] is True
    assert kubectl(frozen, "get", "nodes").stdout.splitlines()[1].split()[:2] == [
        "kubesim-node",
        "Ready,SchedulingDisabled",
    ]
    kubectl(frozen, "run", "waiting", "--image=web:1")
    frozen.advance(30)
    pod = frozen.store.get("pods", "waiting", "default")
    assert (pod["status"]["phase"], pod["spec"].get("nodeName")) == ("Pending", None)
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"].startswith("0/1 nodes are available: 1 node(s) were unschedulable.")
    tolerant = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tolerant"},
        "spec": {
            "containers": [{"name": "main", "image": "web:1"}],
            "tolerations": [
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    }
    kubectl(frozen, "apply", "-f", "-", stdin=json.dumps(tolerant))
    assert kubectl(frozen, "uncordon", "kubesim-node").stdout.strip() == "node/kubesim-node uncordoned"
    assert frozen.run_until(
        lambda: all(
            frozen.store.get("pods", name, "default")["status"]["phase"] == "Running"
            for name in ("waiting", "tolerant")
        ),
        within=60,
    )


def test_discovery_lists_the_eviction_subresource_as_drain_looks_for_it(frozen: Simulator) -> None:
    """kubectl drain's CheckEvictionSupport looks in /api/v1 for `pods/eviction` of kind Eviction with a
    group and version; a real API server lists it as policy/v1, verb create."""
    listed = json.loads(kubectl(frozen, "get", "--raw", "/api/v1").stdout)["resources"]
    assert {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    } in listed


def test_drain_evicts_the_pods_and_their_replacements_wait_for_a_node(live: Simulator) -> None:
    """ "kubectl drain --ignore-daemonsets <node name>" cordons the node and evicts its pods through the
    Eviction API; pods using emptyDir need `--delete-emptydir-data` ("cannot delete Pods with local
    storage"). The evicted pods carry the DisruptionTarget condition (reason EvictionByEvictionAPI); their
    Deployment's replacements wait, as no node is schedulable."""
    kubectl(live, "apply", "-f", "-", stdin=web(2, volumes=True))
    kubectl(live, "rollout", "status", "deployment/web", "--timeout=60s")
    marked: list[dict[str, Any]] = []

    def watch(_event: str, pod: dict[str, Any]) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        marked.extend(c for c in conditions if c["type"] == "DisruptionTarget")

    subscription = live.store.subscribe(watch, resource="pods")
    refused = kubectl(live, "drain", "kubesim-node", "--ignore-daemonsets", "--timeout=30s", check=False)
    assert refused.returncode != 0
    assert "cannot delete Pods with local storage" in refused.stderr
    evicted = [p["metadata"]["name"] for p in running_pods(live)]
    drained = kubectl(
        live, "drain", "kubesim-node", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"
    )
    subscription.cancel()
    assert sorted(line for line in drained.stdout.splitlines() if line.endswith("evicted")) == sorted(
        f"pod/{name} evicted" for name in evicted
    )
    assert drained.stdout.strip().endswith("node/kubesim-node drained")
    assert {(c["reason"], c["message"]) for c in marked} == {
        ("EvictionByEvictionAPI", "Eviction API: evicting")
    }
    replacements = live.store.list("pods", "default", label_selector="app=web")["items"]
    assert len(replacements) == 2
    assert not {p["metadata"]["name"] for p in replacements} & set(evicted)
    assert all(p["status"]["phase"] == "Pending" and not p["spec"].get("nodeName") for p in replacements)


def test_drain_without_eviction_deletes_the_pods(live: Simulator) -> None:
    """`kubectl drain --disable-eviction` "force drain to use delete, even if eviction is supported"; kubectl
    sends the DeleteOptions as protobuf."""
    kubectl(live, "apply", "-f", "-", stdin=web(2))
    kubectl(live, "rollout", "status", "deployment/web", "--timeout=60s")
    deleted = [p["metadata"]["name"] for p in running_pods(live)]
    drained = kubectl(
        live, "drain", "kubesim-node", "--ignore-daemonsets", "--disable-eviction", "--timeout=60s"
    )
    assert sorted(line for line in drained.stdout.splitlines() if line.endswith(" deleted")) == sorted(
        f"pod/{name} deleted" for name in deleted
    )
    assert not any(live.store.exists("pods", name, "default") for name in deleted)


def test_a_budget_that_allows_no_disruption_stops_the_drain(live: Simulator) -> None:
    """ "If the eviction would violate the budget, the API server returns 429 Too Many Requests"; kubectl
    drain retries ("error when evicting pods/... (will retry after 5s): Cannot evict pod as it would violate
    the pod's disruption budget.") until its --timeout."""
    kubectl(live, "apply", "-f", "-", stdin=web(2))
    kubectl(live, "apply", "-f", "-", stdin=budget(minAvailable=2))
    kubectl(live, "rollout", "status", "deployment/web", "--timeout=60s")
    drain = kubectl(live, "drain", "kubesim-node", "--ignore-daemonsets", "--timeout=3s", check=False)
    assert drain.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in drain.stderr
    assert len(running_pods(live)) == 2
    name = running_pods(live)[0]["metadata"]["name"]
    body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
    raw = kubectl(
        live,
        "create",
        "--raw",
        f"/api/v1/namespaces/default/pods/{name}/eviction",
        "-f",
        "-",
        stdin=body,
        check=False,
    )
    assert "Error from server (TooManyRequests)" in raw.stderr
    columns = kubectl(live, "get", "pdb", "web").stdout.splitlines()[1].split()
    assert columns[:4] == ["web", "2", "N/A", "0"]


def test_a_budget_lets_a_drain_through_one_pod_at_a_time(kubesim_factory: Factory) -> None:
    """With `maxUnavailable: 1` a drain proceeds as the evicted pods' replacements become ready elsewhere:
    every eviction takes the one allowed disruption, the next waits for the budget to recover."""
    sim = kubesim_factory(https=True, auth=True, kubelet=True, nodes=2)
    sim.kubelet.settings.start_delay = 0.2
    kubectl(sim, "apply", "-f", "-", stdin=web(4))
    kubectl(sim, "apply", "-f", "-", stdin=budget(maxUnavailable=1))
    kubectl(sim, "rollout", "status", "deployment/web", "--timeout=60s")
    on_first = len(running_pods(sim, "kubesim-node"))
    assert on_first == 2
    healthy: list[int] = []
    sim.store.subscribe(
        lambda _e, b: healthy.append(int((b.get("status") or {}).get("currentHealthy") or 0)),
        resource=disruption.BUDGETS,
    )
    drained = kubectl(sim, "drain", "kubesim-node", "--ignore-daemonsets", "--timeout=60s")
    assert drained.stdout.strip().endswith("node/kubesim-node drained")
    kubectl(sim, "rollout", "status", "deployment/web", "--timeout=60s")
    assert len(running_pods(sim, "kubesim-node-2")) == 4
    assert min(healthy) == 3  # never below replicas - maxUnavailable


def test_budget_status_counts_expected_desired_and_healthy_pods(frozen: Simulator) -> None:
    """ "expectedPods", "desiredHealthy", "currentHealthy" and "disruptionsAllowed" as the disruption
    controller writes them; a percentage counts against the controller's scale."""
    kubectl(frozen, "apply", "-f", "-", stdin=web(3))
    kubectl(frozen, "apply", "-f", "-", stdin=budget(minAvailable="50%"))
    assert frozen.run_until(lambda: budget_status(frozen).get("currentHealthy") == 3, within=60)
    status = budget_status(frozen)
    condition = status.pop("conditions")
    assert status == {
        "observedGeneration": 1,
        "disruptionsAllowed": 1,
        "currentHealthy": 3,
        "desiredHealthy": 2,
        "expectedPods": 3,
    }
    assert [(c["type"], c["status"], c["reason"]) for c in condition] == [
        ("DisruptionAllowed", "True", "SufficientPods")
    ]
    kubectl(frozen, "scale", "deployment/web", "--replicas=1")
    assert frozen.run_until(lambda: budget_status(frozen).get("expectedPods") == 1, within=60)
    assert frozen.run_until(lambda: budget_status(frozen).get("disruptionsAllowed") == 0, within=60)


def test_a_pod_whose_controller_has_no_scale_fails_the_budget_safe(frozen: Simulator) -> None:
    """A percentage or maxUnavailable needs the pods' controller scale; a Job has none, so the controller
    reports SyncFailed and allows no disruption."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "i"}]},
            }
        },
    }
    kubectl(frozen, "apply", "-f", "-", stdin=json.dumps(job))
    kubectl(frozen, "apply", "-f", "-", stdin=budget(maxUnavailable=1))
    frozen.store.wait_idle()
    status = budget_status(frozen)
    (condition,) = status["conditions"]
    assert (status["disruptionsAllowed"], condition["reason"]) == (0, "SyncFailed")
    assert condition["message"].startswith('found no controllers for pod "once-')


def test_pending_pods_and_dry_runs_and_two_budgets(frozen: Simulator) -> None:
    """A Pending pod is evicted whatever its budget ("canIgnorePDB"); `dryRun=All` answers as an eviction
    would and changes nothing; a pod two budgets select cannot be evicted ("This pod has more than one
    PodDisruptionBudget, which the eviction subresource does not support.", a 500)."""
    kubectl(frozen, "apply", "-f", "-", stdin=web(1))
    kubectl(frozen, "apply", "-f", "-", stdin=budget(minAvailable=1))
    assert frozen.run_until(lambda: budget_status(frozen).get("currentHealthy") == 1, within=60)
    (running,) = running_pods(frozen)
    name = running["metadata"]["name"]

    def evict(pod: str, query: str = "") -> subprocess.CompletedProcess[str]:
        body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}})
        path = f"/api/v1/namespaces/default/pods/{pod}/eviction{query}"
        return kubectl(frozen, "create", "--raw", path, "-f", "-", stdin=body, check=False)

    assert "Error from server (TooManyRequests)" in evict(name).stderr
    kubectl(frozen, "apply", "-f", "-", stdin=budget(minAvailable=0))
    dry = evict(name, "?dryRun=All")
    assert json.loads(dry.stdout) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert frozen.store.exists("pods", name, "default")
    assert "disruptedPods" not in budget_status(frozen)
    second = json.loads(budget(minAvailable=0))
    second["metadata"]["name"] = "second"
    kubectl(frozen, "apply", "-f", "-", stdin=json.dumps(second))
    assert "more than one PodDisruptionBudget" in evict(name).stderr
    kubectl(frozen, "delete", "pdb", "second")
    kubectl(frozen, "apply", "-f", "-", stdin=budget(minAvailable=5))
    kubectl(frozen, "cordon", "kubesim-node")
    kubectl(frozen, "run", "stuck", "--image=web:1", "--labels=app=web")
    frozen.store.wait_idle()
    assert frozen.store.get("pods", "stuck", "default")["status"]["phase"] == "Pending"
    assert json.loads(evict("stuck").stdout)["status"] == "Success"
    assert not frozen.store.exists("pods", "stuck", "default")
    assert "Error from server (NotFound)" in evict("stuck").stderr


# --- the rules ---------------------------------------------------------------------------------------------


def pod(name: str, *, ready: bool = True, deleting: bool = False, controlled: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": "web"}}
    if controlled:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "rs", "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = STAMP
    conditions = [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": STAMP}]
    return {"metadata": metadata, "status": {"phase": "Running", "conditions": conditions}}


def pdb(status: dict[str, Any] | None = None, generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        "status": status or {},
    }


def test_a_missing_selector_selects_nothing_and_an_empty_one_everything() -> None:
    assert not disruption.selects({"spec": {}}, pod("a"))
    assert disruption.selects({"spec": {"selector": {}}}, pod("a"))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": 2}, (3, 2)),  # an integer counts the pods themselves
        ({"minAvailable": "50%"}, (5, 3)),  # a percentage of the controller's scale, rounded up
        ({"maxUnavailable": 1}, (5, 4)),
        ({"maxUnavailable": "30%"}, (5, 3)),  # 30% of 5 rounds up to 2 unavailable
        ({}, (0, 0)),
    ],
)
def test_expected_and_desired_pods(spec: dict[str, Any], expected: tuple[int, int]) -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    assert disruption.expected_and_desired(pdb(**spec), pods, lambda _pod: ("rs", 5)) == expected


def test_pods_without_a_controller_do_not_count_towards_the_scale() -> None:
    pods = [pod("a"), pod("bare", controlled=False)]
    assert disruption.expected_and_desired(pdb(maxUnavailable=0), pods, lambda _pod: ("rs", 2)) == (2, 2)


def test_a_controller_that_cannot_be_found_is_an_error() -> None:
    with pytest.raises(LookupError, match='found no controllers for pod "a"'):
        disruption.expected_and_desired(pdb(maxUnavailable=1), [pod("a")], lambda _pod: None)


def test_healthy_pods_are_ready_neither_deleting_nor_recently_evicted() -> None:
    pods = [pod("a"), pod("b", ready=False), pod("c", deleting=True), pod("d")]
    assert disruption.current_healthy(pods, {"d": STAMP}) == 1


def test_an_eviction_is_forgotten_after_two_minutes_or_once_its_pod_is_deleting() -> None:
    recorded = pdb({"disruptedPods": {"a": STAMP, "b": STAMP, "gone": STAMP}})
    pods = [pod("a"), pod("b", deleting=True)]
    assert disruption.still_disrupted(recorded, pods, NOW + 60) == {"a": STAMP}
    assert disruption.still_disrupted(recorded, pods, NOW + 121) == {}


def test_disruptions_are_allowed_only_while_pods_are_expected() -> None:
    status = disruption.budget_status(pdb(minAvailable=1), [pod("a"), pod("b")], 0, 1, NOW)
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0)
    assert status["conditions"][0]["reason"] == "InsufficientPods"
    status = disruption.budget_status(pdb(minAvailable=1), [pod("a"), pod("b")], 2, 1, NOW)
    assert status["disruptionsAllowed"] == 1
    assert status["conditions"][0]["reason"] == "SufficientPods"


def test_an_eviction_needs_a_current_budget_with_room() -> None:
    with pytest.raises(ApiError, match="is still being processed by the server") as stale:
        eviction.check_budget(pdb({"observedGeneration": 1, "disruptionsAllowed": 1}, generation=2))
    assert (stale.value.code, stale.value.headers) == (429, {"Retry-After": "10"})
    with pytest.raises(ApiError) as full:
        eviction.check_budget(
            pdb({"observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 2, "currentHealthy": 2})
        )
    assert (full.value.code, full.value.reason, full.value.message) == (
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    assert full.value.details == {
        "causes": [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
            }
        ]
    }
    eviction.check_budget(pdb({"observedGeneration": 1, "disruptionsAllowed": 1}))


def test_an_allowed_eviction_takes_a_disruption_and_records_the_pod() -> None:
    taken = eviction.decremented(pdb({"observedGeneration": 1, "disruptionsAllowed": 1}), "a", STAMP)
    assert taken["status"]["disruptionsAllowed"] == 0
    assert taken["status"]["disruptedPods"] == {"a": STAMP}
    assert taken["status"]["conditions"][0]["reason"] == "InsufficientPods"
