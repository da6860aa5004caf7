"""Gang scheduling end to end, with real processes: kubesim with Volcano's and scheduler-plugins' PodGroup
CRDs installed, a `celery worker` running the controllers with JOBS_GANG_SCHEDULER set (once per
scheduler), and kubectl as the user and as the gang scheduler. The worker's PodGroup watch is what makes
a Volcano job start once Volcano (here: the test, with kubectl) admits its PodGroup.
(Without a gang scheduler, test_operator.py runs the same operator: no PodGroups, the default scheduler.)"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
import redis as redis_lib

from jobs.tests import simclock
from jobs.tests.cluster import (
    install_crds,
    install_pod_group_crds,
    job_manifest,
    live_pods,
    pods,
)
from jobs.tests.controller_worker import leading_controller_worker
from jobs.tests.test_operator import apply, database_url, kubectl, until
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST
from kubesim.errors import ApiError
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

pytestmark = pytest.mark.django_db

REDIS_DB = int(os.environ.get("JOBS_GANG_TEST_REDIS_DB", "12"))
T0 = datetime(2026, 6, 2, 8, 0, 0, tzinfo=UTC)
POD_GROUPS = {
    "volcano": "podgroups.scheduling.volcano.sh",
    "scheduler-plugins": "podgroups.scheduling.x-k8s.io",
}
_namespaces = count(1)


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}", decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def sim(redis) -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        install_pod_group_crds(simulator)
        simclock.publish(redis, simulator.clock.time())
        yield simulator


@pytest.fixture(scope="module", params=["volcano", "scheduler-plugins"])
def scheduler(request, sim, redis, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """A controller worker with JOBS_GANG_SCHEDULER=<the param>; yields the scheduler."""
    with django_db_blocker.unblock():
        env = {
            **os.environ,
            **controller_worker_env(f"argoml-gang-{request.param}", JOBS_CLOCK="jobs.tests.simclock.now"),
            "JOBS_GANG_SCHEDULER": request.param,
            "DATABASE_URL": database_url(),
            "REDIS_URL": f"redis://{REDIS_HOST}/{REDIS_DB}",
            "KUBECONFIG": str(sim.kubeconfig_path),
        }
    logdir = tmp_path_factory.mktemp(f"gang-{request.param}")
    with leading_controller_worker(f"gang-{request.param}", env, logdir, django_db_blocker):
        yield request.param


@pytest.fixture
def ns(sim, scheduler) -> str:
    name = f"gang-op-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


def pod_group(sim: Simulator, scheduler: str, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return sim.store.get(POD_GROUPS[scheduler], name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


def test_a_job_applied_with_kubectl_gets_its_pod_group_first_then_pods_marked_for_the_gang(
    sim, scheduler, ns
):
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 2}, name="gang", namespace=ns)
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "2", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1},  # an extended resource's limit must be set, equal to its request
    }
    apply(sim, manifest)
    until(lambda: pod_group(sim, scheduler, ns, "gang") is not None, "the PodGroup")
    if scheduler == "volcano":
        assert pods(sim, ns) == {}  # not before Volcano admits the gang
        kubectl(sim, "-n", ns, "patch", POD_GROUPS[scheduler], "gang", "--type", "merge",
                "-p", json.dumps({"status": {"phase": "Inqueue"}}))  # fmt: skip
    until(lambda: len(live_pods(sim, ns)) == 3, "the three pods")

    printed = kubectl(sim, "-n", ns, "get", POD_GROUPS[scheduler], "gang", "-o", "json")
    group = json.loads(printed)
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "4", "nvidia.com/gpu": "2"}
    assert group["metadata"]["ownerReferences"][0]["name"] == "gang"
    for pod in live_pods(sim, ns).values():
        if scheduler == "volcano":
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gang"
        else:
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"

    # Scaling: the PodGroup follows the replica count.
    kubectl(sim, "-n", ns, "patch", "tfjob", "gang", "--type", "merge",
            "-p", json.dumps({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}}))  # fmt: skip
    until(lambda: pod_group(sim, scheduler, ns, "gang")["spec"]["minMember"] == 5, "minMember 5")
    until(lambda: len(live_pods(sim, ns)) == 5, "five pods")
    assert pod_group(sim, scheduler, ns, "gang")["spec"]["minResources"] == {
        "cpu": "8",
        "nvidia.com/gpu": "4",
    }

    # Deleting the job: the garbage collector removes the PodGroup with the pods (ownerReference).
    kubectl(sim, "-n", ns, "delete", "tfjob", "gang", "--wait=false")
    until(lambda: pod_group(sim, scheduler, ns, "gang") is None, "the PodGroup to go with its job")
