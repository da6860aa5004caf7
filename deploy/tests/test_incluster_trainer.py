"""trainer.installRuntimes in a cluster that enforces RBAC: the chart's runtimes Job runs `install_runtimes`
with its own ServiceAccount's token (KUBE_IN_CLUSTER), creates the runtimes, then updates one that drifted,
and no request is refused. Its Role is also no wider than that (deploy/tests/test_rbac.py). With
trainer.installCRDs, every authenticated user reads Trainer's public ConfigMap (and nothing else in its
namespace), and the controller records a TrainJob's core v1 Events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from argoml_site.crds import TRAINER_RESOURCES
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer import public

from . import incluster
from .manifests import NAMESPACE, REPO, of_kind, render_chart

ACCOUNT = "argoml-trainer-runtimes"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Simulator]:
    with running_simulator(https=True, auth=True) as sim:
        for resource in TRAINER_RESOURCES:
            sim.store.create(resource.manifest())
        sim.store.ensure_namespace(NAMESPACE)
        chart = render_chart({"trainer": {"installCRDs": True, "installRuntimes": True}})
        incluster.install_rbac(sim, of_kind(chart, *incluster.RBAC_KINDS))
        yield sim


def run_as_the_job(sim: Simulator, workdir: Path) -> subprocess.CompletedProcess[str]:
    """The Job's container: `install-runtimes` with the Job's env and its ServiceAccount's token."""
    token_dir = incluster.mount_service_account(workdir / "sa", sim, incluster.issue_token(sim, ACCOUNT))
    env = {key: value for key, value in os.environ.items() if not key.startswith("KUBE")}
    env.update(incluster.service_environment(sim))
    env.update(
        KUBE_IN_CLUSTER="true",
        KUBECONFIG="",
        KUBE_SERVICEACCOUNT_DIR=str(token_dir),
        SECRET_KEY="install-runtimes-signs-nothing",
    )
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "install_runtimes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_runtimes_job_creates_and_updates_runtimes_with_its_own_token_and_nothing_is_refused(
    cluster, tmp_path
):
    first = run_as_the_job(cluster, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "clustertrainingruntime/torch-distributed created" in first.stdout

    drifted = cluster.store.get("clustertrainingruntimes.trainer.kubeflow.org", "jax-distributed", "")
    drifted["spec"]["mlPolicy"]["numNodes"] = 5
    cluster.store.update(drifted)
    second = run_as_the_job(cluster, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "clustertrainingruntime/jax-distributed updated" in second.stdout
    assert "clustertrainingruntime/torch-distributed unchanged" in second.stdout

    gate = cluster.security.gate
    assert gate is not None
    assert [denial.verb for denial in gate.denials] == []


def request_as(sim: Simulator, account: str, namespace: str, method: str, path: str, body: Any = None) -> int:
    """The status of one request made with a token of `account` (a ServiceAccount in `namespace`)."""
    token = incluster.issue_token(sim, account, namespace)
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    response = requests.request(
        method,
        sim.url + path,
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
        data=None if body is None else json.dumps(body),
        verify=str(sim.security.ca_path),
        timeout=30,
    )
    return response.status_code


def test_every_authenticated_user_may_read_trainers_public_configmap_and_nothing_else_there(cluster):
    for manifest in public.manifests():
        if manifest["kind"] == "ConfigMap":
            cluster.store.create(manifest)
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "private", "namespace": "kubeflow-system"},
        }
    )
    cluster.store.ensure_namespace(incluster.USER_NAMESPACE)
    configmaps = "/api/v1/namespaces/kubeflow-system/configmaps"
    user = ("default", incluster.USER_NAMESPACE)
    assert request_as(cluster, *user, "GET", f"{configmaps}/kubeflow-trainer-public") == 200
    assert request_as(cluster, *user, "GET", f"{configmaps}/private") == 403
    assert request_as(cluster, *user, "PATCH", f"{configmaps}/kubeflow-trainer-public", {}) == 403


def test_the_controller_may_record_a_trainjobs_core_events(cluster):
    cluster.store.ensure_namespace(incluster.USER_NAMESPACE)
    events = f"/api/v1/namespaces/{incluster.USER_NAMESPACE}/events"
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "mnist.17e3a1b2c3d4e5f6"},
        "involvedObject": {"kind": "TrainJob", "name": "mnist", "namespace": incluster.USER_NAMESPACE},
        "reason": "SuccessfulCreatePod",
        "message": "Created pod: mnist-node-0-0",
        "type": "Normal",
        "firstTimestamp": "2026-11-28T02:00:00Z",
        "lastTimestamp": "2026-11-28T02:00:00Z",
        "count": 1,
    }
    controller = (incluster.ACCOUNTS["controller"], NAMESPACE)
    assert request_as(cluster, *controller, "POST", events, event) == 201
    assert request_as(cluster, *controller, "PATCH", f"{events}/mnist.17e3a1b2c3d4e5f6", {"count": 2}) == 200
    assert request_as(cluster, *controller, "GET", f"{events}/mnist.17e3a1b2c3d4e5f6") == 403
