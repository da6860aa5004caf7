"""Kubeflow's v1 Python SDK (`kubeflow-training` 1.9.4 from PyPI, unchanged) against kubesim, with our
controller worker serving `kubeflow.org/v1` (JOBS_KUBEFLOW_V1): what a Kubeflow user's notebook does, call by
call.

The SDK runs in its own virtualenv (.venv-kubeflow-sdk, `make` builds it from requirements-kubeflow-sdk.txt):
it requires kubernetes<36 and cannot read the models of ours (37). kubeflow_sdk_driver.py makes the calls
there and reports each one; these tests assert on the reports. The simulator runs on the real clock, so the
SDK's own polling works as against a cluster; a container with no script runs 2 seconds and exits 0. MXJob
is ours but no longer Kubeflow's: the SDK refuses the kind before any call.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from django.db import connection

from jobs.models import TrainingJob
from jobs.tests.cluster import install_crds, job_manifest
from jobs.tests.controller_worker import REPO, leading_controller_worker
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

pytestmark = pytest.mark.django_db

REDIS_DB = int(os.environ.get("JOBS_SDK_TEST_REDIS_DB", "10"))
WAIT = 60
_namespaces = count(1)


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the SDK tests share their database with a worker process: PostgreSQL only")
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}", decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def sim(redis) -> Iterator[Simulator]:
    with running_simulator(kubelet=True) as simulator:
        install_crds(simulator)  # ours and Kubeflow's, as `install_crds --kubeflow` does
        yield simulator


@pytest.fixture(scope="module")
def worker(sim, redis, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:
    """`celery worker -Q reconcile` with the controllers on, Kubeflow's group served."""
    with django_db_blocker.unblock():
        env = {
            **os.environ,
            **controller_worker_env("argoml-kubeflow-sdk-test", JOBS_KUBEFLOW_V1="true"),
            "DATABASE_URL": database_url(),
            "REDIS_URL": f"redis://{REDIS_HOST}/{REDIS_DB}",
            "KUBECONFIG": str(sim.kubeconfig_path),
        }
    logdir = tmp_path_factory.mktemp("kubeflow-sdk-worker")
    with leading_controller_worker("kubeflow-sdk", env, logdir, django_db_blocker) as running:
        yield running


@pytest.fixture
def ns(sim, worker) -> str:
    name = f"sdk-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


SDK_PYTHON = REPO / ".venv-kubeflow-sdk" / "bin" / "python"
DRIVER = Path(__file__).with_name("kubeflow_sdk_driver.py")


def run_sdk(sim: Simulator, namespace: str, scenario: str, **parameters: Any) -> dict[str, dict[str, Any]]:
    """The SDK's calls of one scenario, by call name: {"ok": True, "value": ...} or {"ok": False, "error"}."""
    if not SDK_PYTHON.exists():
        pytest.fail(f"{SDK_PYTHON} is missing: `make test` builds it (requirements-kubeflow-sdk.txt)")
    result = subprocess.run(
        [str(SDK_PYTHON), str(DRIVER), str(sim.kubeconfig_path), namespace, scenario],
        input=json.dumps(parameters),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {call.pop("call"): call for call in json.loads(result.stdout)["calls"]}


def values(calls: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each call's value, once every call passed (the failures are the assertion message otherwise)."""
    failed = {name: call["error"] for name, call in calls.items() if not call["ok"]}
    assert not failed, failed
    return {name: call["value"] for name, call in calls.items()}


def kubeflow_manifest(
    kind: str, replicas: dict[str, int], *, name: str, namespace: str, **options: Any
) -> dict:
    manifest = job_manifest(kind, replicas, name=name, namespace=namespace, **options)
    manifest["apiVersion"] = "kubeflow.org/v1"
    return manifest


@pytest.mark.parametrize(
    ("kind", "replicas", "master"),
    [
        ("TFJob", {"Chief": 1, "Worker": 2}, "mnist-chief-0"),
        ("PyTorchJob", {"Master": 1, "Worker": 2}, "mnist-master-0"),
        ("XGBoostJob", {"Master": 1, "Worker": 2}, "mnist-master-0"),
        ("PaddleJob", {"Master": 1, "Worker": 2}, "mnist-master-0"),
        ("JAXJob", {"Worker": 2}, "mnist-worker-0"),
        ("MPIJob", {"Launcher": 1, "Worker": 2}, "mnist-launcher-0"),
    ],
)
def test_a_job_from_a_manifest_goes_through_every_sdk_call(sim, ns, kind, replicas, master):
    scripts = {replica_type: {"duration": 4, "output": ["epoch 1", "epoch 2"]} for replica_type in replicas}
    # The SDK's models require runPolicy: a manifest written for the SDK has one.
    manifest = kubeflow_manifest(
        kind, replicas, name="mnist", namespace=ns, scripts=scripts, run_policy={"cleanPodPolicy": "None"}
    )
    seen = values(run_sdk(sim, ns, "manifest", kind=kind, manifest=manifest))

    assert seen["is_job_created"]
    assert seen["is_job_running"]
    assert seen["get_job_pod_names"] == sorted(
        f"mnist-{t.lower()}-{i}" for t, n in replicas.items() for i in range(n)
    )
    assert seen["get_job_pod_names(is_master)"] == [master]
    assert seen["get_job_pod_names(worker 1)"] == ["mnist-worker-1"]
    assert seen["is_job_succeeded"]
    assert not seen["is_job_failed"]
    assert not seen["is_job_restarting"]
    assert seen["get_job_conditions"] == [
        ["Created", "True", f"{kind}Created", f"{kind} mnist is created."],
        ["Running", "False", f"{kind}Running", f"{kind} {ns}/mnist is running."],
        ["Succeeded", "True", f"{kind}Succeeded", f"{kind} {ns}/mnist successfully completed."],
    ]
    assert seen["get_job_conditions(job)"] == seen["get_job_conditions"]
    assert list(seen["get_job_logs"]) == [master]
    assert "epoch 2" in seen["get_job_logs"][master]
    assert seen["get_job"]["cleanPodPolicy"] == "None"
    assert seen["get_job(labels)"] == {"team": "vision"}
    assert seen["list_jobs"] == ["mnist"]
    assert seen["list_jobs(after delete)"] == []


@pytest.mark.parametrize(
    ("kind", "counts", "pods"),
    [
        ("TFJob", {"num_workers": 2, "num_chief_replicas": 1, "num_ps_replicas": 1},
         ["fn-chief-0", "fn-ps-0", "fn-worker-0", "fn-worker-1"]),
        ("PyTorchJob", {"num_workers": 2}, ["fn-master-0", "fn-worker-0"]),
    ],
)  # fmt: skip
def test_a_job_from_a_training_function_and_an_image_runs_with_its_replica_counts(
    sim, ns, kind, counts, pods
):
    seen = values(run_sdk(sim, ns, "function", kind=kind, name="fn", counts=counts))
    assert seen["wait_for_job_conditions(Succeeded)"] == "fn"
    assert seen["get_job_pod_names"] == pods
    assert "training with" in seen["get_job_pods(is_master)"]


def test_list_jobs_reads_a_job_applied_without_run_policy_once_the_operator_defaulted_it(sim, ns):
    """Kubeflow's SDK requires runPolicy in every job it lists; a job written without the webhook (kubectl
    against a cluster whose webhooks are off) gets it from the operator."""
    manifest = kubeflow_manifest("TFJob", {"Worker": 1}, name="bare", namespace=ns)
    assert "runPolicy" not in manifest["spec"]
    sim.store.create(manifest)
    wait_for(
        lambda: "runPolicy" in sim.store.get("tfjobs.kubeflow.org", "bare", ns)["spec"], 30, "the default"
    )
    assert values(run_sdk(sim, ns, "list", kind="TFJob"))["list_jobs"] == ["bare"]


def test_the_sdk_no_longer_knows_mxjob_so_it_refuses_the_kind_before_any_call(sim, ns):
    refused = run_sdk(sim, ns, "list", kind="MXJob")["TrainingClient"]
    assert not refused["ok"]
    assert "Job kind must be one of" in refused["error"]


def test_a_job_of_each_group_runs_owned_in_its_group_and_the_sdk_sees_only_kubeflows(sim, ns):
    sim.store.create(job_manifest("TFJob", {"Worker": 1}, name="ours", namespace=ns))
    sim.store.create(kubeflow_manifest("TFJob", {"Worker": 1}, name="theirs", namespace=ns))
    wait_for(lambda: len(sim.store.list("pods", ns)["items"]) == 2, 30, "a pod of each job")
    owners = {
        pod["metadata"]["name"]: pod["metadata"]["ownerReferences"][0]["apiVersion"]
        for pod in sim.store.list("pods", ns)["items"]
    }
    assert owners == {"ours-worker-0": "argoml.io/v1alpha1", "theirs-worker-0": "kubeflow.org/v1"}
    assert values(run_sdk(sim, ns, "list", kind="TFJob"))["list_jobs"] == ["theirs"]
    wait_for(lambda: TrainingJob.objects.filter(namespace=ns).count() == 2, 30, "both mirrored")
    rows = dict(TrainingJob.objects.filter(namespace=ns).values_list("name", "api_group"))
    assert rows == {"ours": "argoml.io", "theirs": "kubeflow.org"}
