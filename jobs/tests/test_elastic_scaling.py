"""Elastic PyTorchJobs scaled from outside, end to end: `kubectl scale` on the job's scale subresource and
the HorizontalPodAutoscaler the operator keeps for it, with a real controller worker against kubesim (the
set-up of test_operator.py, whose fixtures this module shares).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobs.tests import test_operator as operator
from jobs.tests.cluster import env_of, events_about, job_manifest, live_pods, pods, services
from jobs.tests.test_operator import advance, apply, kubectl, quiet, until
from kubesim.simulator import Simulator

pytestmark = pytest.mark.django_db

# test_operator's fixtures: a simulator, Redis and a controller worker for this module, a namespace per test.
redis, sim, worker, ns = operator.redis, operator.sim, operator.worker, operator.ns

CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}
#: What every worker of the elastic job below is told, whatever the job's size: scaling changes none of it.
RENDEZVOUS = {
    "PET_RDZV_ENDPOINT": "elastic-worker-0:23456",
    "PET_RDZV_BACKEND": "c10d",
    "PET_RDZV_ID": "run-1",
    "PET_NNODES": "2:4",
}


def elastic_job(namespace: str, **policy: Any) -> dict[str, Any]:
    return job_manifest(
        "PyTorchJob",
        {"Worker": 2},
        name="elastic",
        namespace=namespace,
        scripts={"Worker": {"duration": None}},
        elasticPolicy={"minReplicas": 2, "maxReplicas": 4, "rdzvId": "run-1", **policy},
    )


def workers(count: int) -> set[str]:
    return {f"elastic-worker-{index}" for index in range(count)}


def uids(sim: Simulator, namespace: str) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in live_pods(sim, namespace).items()}


def rendezvous_env(sim: Simulator, namespace: str, pod: str) -> dict[str, str | None]:
    env = env_of(pods(sim, namespace)[pod], "pytorch")
    return {name: env.get(name) for name in RENDEZVOUS}


def scale_of(sim: Simulator, namespace: str) -> dict[str, Any]:
    path = f"/apis/argoml.io/v1alpha1/namespaces/{namespace}/pytorchjobs/elastic/scale"
    return json.loads(kubectl(sim, "get", "--raw", path))


def hpa(sim: Simulator, namespace: str) -> dict[str, Any] | None:
    found = sim.store.list("horizontalpodautoscalers.autoscaling", namespace)["items"]
    return next((item for item in found if item["metadata"]["name"] == "elastic"), None)


def test_kubectl_scale_takes_a_workers_only_elastic_job_from_2_to_4_and_back(sim, redis, ns):
    apply(sim, elastic_job(ns))
    until(lambda: set(live_pods(sim, ns)) == workers(2), "2 workers")
    quiet(sim, redis)
    advance(sim, redis, 2)
    first = uids(sim, ns)
    scale = scale_of(sim, ns)
    assert scale["spec"]["replicas"] == 2
    assert scale["status"] == {
        "replicas": 2,
        "selector": "argoml.io/job-name=elastic,argoml.io/replica-type=worker",
    }

    assert "scaled" in kubectl(sim, "scale", "pytorchjob", "elastic", "-n", ns, "--replicas=4")
    until(lambda: set(live_pods(sim, ns)) == workers(4), "a scale up to 4 workers")
    until(lambda: set(services(sim, ns)) == workers(4), "a service for each new worker")
    assert {name: uid for name, uid in uids(sim, ns).items() if name in first} == first, "no worker restarted"
    for pod in sorted(workers(4)):
        assert rendezvous_env(sim, ns, pod) == RENDEZVOUS, pod
    quiet(sim, redis)
    advance(sim, redis, 2)
    until(lambda: scale_of(sim, ns)["status"]["replicas"] == 4, "the scale subresource to count 4 active")

    kubectl(sim, "scale", "pytorchjob", "elastic", "-n", ns, "--replicas=2")
    until(lambda: set(live_pods(sim, ns)) == workers(2), "a scale down to the 2 lowest indices")
    until(lambda: set(services(sim, ns)) == workers(2), "the removed workers' services to go too")
    assert uids(sim, ns) == first, "the remaining workers were not restarted"
    quiet(sim, redis)
    notes = dict(events_about(sim, ns, "elastic"))
    deleted = "Deleted pods: elastic-worker-2, elastic-worker-3 (not in the spec)"
    assert notes["SuccessfulDeletePod"] == deleted, notes
    stored = json.loads(kubectl(sim, "get", "pytorchjob", "elastic", "-n", ns, "-o", "json"))
    assert stored["status"]["conditions"][-1]["type"] == "Running"
    assert stored["status"]["replicaStatuses"]["Worker"]["active"] == 2


def test_the_operator_keeps_an_hpa_while_the_policy_has_metrics(sim, redis, ns):
    apply(sim, elastic_job(ns, metrics=[CPU]))
    until(lambda: hpa(sim, ns) is not None, "the HorizontalPodAutoscaler")
    job = json.loads(kubectl(sim, "get", "pytorchjob", "elastic", "-n", ns, "-o", "json"))
    made = json.loads(kubectl(sim, "get", "hpa", "elastic", "-n", ns, "-o", "json"))
    assert made["apiVersion"] == "autoscaling/v2"
    assert made["spec"] == {
        "scaleTargetRef": {"apiVersion": "argoml.io/v1alpha1", "kind": "PyTorchJob", "name": "elastic"},
        "minReplicas": 2,
        "maxReplicas": 4,
        "metrics": [CPU],
    }
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "PyTorchJob",
        "elastic",
        job["metadata"]["uid"],
        True,
    )
    quiet(sim, redis)

    patch = '{"spec":{"elasticPolicy":{"maxReplicas":6}}}'
    kubectl(sim, "patch", "pytorchjob", "elastic", "-n", ns, "--type=merge", "-p", patch)
    until(lambda: hpa(sim, ns)["spec"]["maxReplicas"] == 6, "the HPA to follow maxReplicas")
    assert hpa(sim, ns)["metadata"]["uid"] == made["metadata"]["uid"], "updated in place"

    # What the autoscaler would do: write the job's scale subresource within its bounds.
    kubectl(sim, "scale", "pytorchjob", "elastic", "-n", ns, "--replicas=3")
    until(lambda: set(live_pods(sim, ns)) == workers(3), "a third worker")

    suspend = '{"spec":{"runPolicy":{"suspend":true}}}'
    kubectl(sim, "patch", "pytorchjob", "elastic", "-n", ns, "--type=merge", "-p", suspend)
    until(lambda: hpa(sim, ns) is None, "the HPA to go while the job is suspended")
    resume = '{"spec":{"runPolicy":{"suspend":false}}}'
    kubectl(sim, "patch", "pytorchjob", "elastic", "-n", ns, "--type=merge", "-p", resume)
    until(lambda: hpa(sim, ns) is not None, "the HPA to come back on resume")

    drop = '[{"op":"remove","path":"/spec/elasticPolicy/metrics"}]'
    kubectl(sim, "patch", "pytorchjob", "elastic", "-n", ns, "--type=json", "-p", drop)
    until(lambda: hpa(sim, ns) is None, "the HPA to go with its metrics")
    quiet(sim, redis)
    # Repeats of one event are one Event with a growing series count: each reason shows once here.
    assert {
        "SuccessfulCreateHorizontalPodAutoscaler",
        "SuccessfulUpdateHorizontalPodAutoscaler",
        "SuccessfulDeleteHorizontalPodAutoscaler",
    } <= {reason for reason, _ in events_about(sim, ns, "elastic")}


def test_an_hpa_the_job_does_not_control_is_left_alone_and_reported(sim, redis, ns):
    sim.store.create(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "elastic", "namespace": ns},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 9,
            },
        }
    )
    apply(sim, elastic_job(ns, metrics=[CPU]))
    until(lambda: set(live_pods(sim, ns)) == workers(2), "the job to run regardless")
    quiet(sim, redis)
    assert hpa(sim, ns)["spec"]["maxReplicas"] == 9
    notes = dict(events_about(sim, ns, "elastic"))
    assert notes["FailedCreateHorizontalPodAutoscaler"] == (
        "HorizontalPodAutoscaler elastic exists and is not controlled by this PyTorchJob"
    )
