"""End to end on kubesim: a job that meets its namespace's `restricted` level goes through the write path,
the operator makes its pods (which still meet the level) and the kubelet runs it to success; a job that
breaks the level never reaches the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.test.utils import override_settings

from access.models import NamespacePodSecurity
from jobs import actions, conf
from jobs.reconcile import reconcile_job
from jobs.tests.cluster import get_job, install_crds, job_manifest, pods, state_of
from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from podsecurity import RESTRICTED, check_pod

pytestmark = pytest.mark.django_db

NAMESPACE = "hardened"
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    start = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
    with running_simulator(frozen_clock=True, start_time=start, kubelet=True) as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        mp = pytest.MonkeyPatch()
        mp.setattr(conf, "now", simulator.clock.now)
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        mp.undo()
        reset_client()


def hardened_job(name: str) -> dict:
    manifest = job_manifest(
        "TFJob",
        {"Chief": 1, "Worker": 2},
        name=name,
        namespace=NAMESPACE,
        scripts={"Chief": {"duration": 2}, "Worker": {"duration": 1}},
    )
    for replica in manifest["spec"]["tfReplicaSpecs"].values():
        pod_spec = replica["template"]["spec"]
        pod_spec["securityContext"] = dict(POD_SECURITY)
        pod_spec["containers"][0]["securityContext"] = dict(CONTAINER_SECURITY)
    return manifest


def reconcile(sim: Simulator, name: str, seconds: int) -> None:
    for _ in range(seconds):
        for _ in range(3):
            reconcile_job("TFJob", NAMESPACE, name)
            sim.store.wait_idle()
        sim.advance(1)


def test_a_job_meeting_the_restricted_level_runs_to_success_with_pods_that_meet_it_too(sim):
    NamespacePodSecurity.objects.create(namespace=NAMESPACE, level="restricted")

    actions.submit_job(hardened_job("mnist"))
    reconcile(sim, "mnist", 5)

    created = pods(sim, NAMESPACE)
    assert set(created) == {"mnist-chief-0", "mnist-worker-0", "mnist-worker-1"}
    for pod in created.values():
        assert check_pod(RESTRICTED, pod["spec"], pod["metadata"].get("annotations")) == []
    assert state_of(get_job(sim, "TFJob", NAMESPACE, "mnist")) == "Succeeded"


def test_a_job_breaking_the_level_is_refused_before_the_cluster_sees_it(sim):
    NamespacePodSecurity.objects.create(namespace=NAMESPACE, level="restricted")
    manifest = hardened_job("escape")
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["securityContext"] = {}

    with pytest.raises(actions.JobRejected) as rejected:
        actions.submit_job(manifest)

    container = "spec.tfReplicaSpecs.Worker.template.spec.containers[0].securityContext"
    assert [error.path for error in rejected.value.errors] == [
        f"{container}.allowPrivilegeEscalation",
        f"{container}.capabilities.drop",
    ]
    assert get_job(sim, "TFJob", NAMESPACE, "escape") is None
