"""trainer.installRuntimes in a cluster that enforces RBAC: the chart's runtimes Job runs `install_runtimes`
with its own ServiceAccount's token (KUBE_IN_CLUSTER), creates the runtimes, then updates one that drifted,
and no request is refused. Its Role is also no wider than that (deploy/tests/test_rbac.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube.crds import TRAINER_RESOURCES
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

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
