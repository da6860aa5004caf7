"""The spawner end to end, with real processes: an Argo Workflow runs on kubesim and records `tensorboard`
artifacts → POST /api/tensorboards/ creates the Tensorboard → the informers of a `celery worker`
(controllers on, leader-elected) mirror it into PostgreSQL and enqueue it → a pool process reconciles it →
Deployment and Service in kubesim → the simulated kubelet makes the pod ready → phase Ready with its URL in
the cluster, the API and the admin. DELETE removes all three; the beat task culls an idle instance.

The simulator's clock runs in real time, three hours behind the wall clock: objects it stamps look three
hours old to the worker, which is how an instance nobody opened becomes idle without waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from celery import Celery
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import override_settings
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from kube.client import reset_client
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from tensorboard.models import Tensorboard

from .cluster import children, install_crds, tensorboard
from .workflows import NAMESPACE

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
REDIS_DB = int(os.environ.get("TENSORBOARD_TEST_REDIS_DB", "11"))
LEASE = "argoml-tensorboard-test"
WAIT = 30.0
SIMULATOR_LAG = timedelta(hours=3)


def redis_url() -> str:
    return f"redis://{REDIS_HOST}/{REDIS_DB}"


def database_url() -> str:
    """The test database pytest-django created, for the worker to mirror into."""
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the end-to-end test shares its database with a worker process: PostgreSQL only")
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def redis() -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(redis_url(), decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def sim(redis) -> Iterator[Simulator]:
    start = datetime.now(UTC) - SIMULATOR_LAG
    with running_simulator(start_time=start, kubelet=True, argo=True) as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        with override_settings(
            KUBECONFIG=str(simulator.kubeconfig_path),
            KUBE_IN_CLUSTER=False,
            TENSORBOARD_ARTIFACT_BUCKET="ml-artifacts",
        ):
            reset_client()
            yield simulator
        reset_client()


@pytest.fixture
def worker(sim, tmp_path) -> Iterator[Worker]:
    """`celery worker -Q reconcile,default` with the controllers on, mirroring into the test database."""
    env = {
        **os.environ,
        **controller_worker_env(
            "argoml-tensorboard-test",
            KUBE_QUEUE_LEASE_SECONDS="2.0",
            KUBE_QUEUE_BACKOFF_MAX_SECONDS="5.0",
            TENSORBOARD_ARTIFACT_BUCKET="ml-artifacts",
        ),
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url(),
        "KUBECONFIG": str(sim.kubeconfig_path),
    }
    logfile = tmp_path / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker",
               "-Q", "reconcile,default", "-n", "tensorboard@%h", "-c", "2", "--without-gossip",
               "--without-mingle", "--without-heartbeat", "-l", "INFO",
               "--logfile", str(logfile)]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    running = Worker("tensorboard", process, logfile)
    try:
        running.wait_ready(60)
        wait_for(lambda: lease_holder(sim).startswith("tensorboard"), WAIT, "the worker to lead")
        yield running
    finally:
        running.stop()
        print(logfile.read_text(errors="replace")[-6000:])  # shown by pytest when the test failed


def lease_holder(sim: Simulator) -> str:
    try:
        lease = sim.store.get("leases", LEASE, "default")
    except Exception:
        return ""
    return str(lease["spec"].get("holderIdentity") or "")


@pytest.fixture
def owner() -> APIClient:
    user = User.objects.create_user("owner")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


def run_training(sim: Simulator, name: str) -> None:
    """An Argo Workflow whose two training steps write TensorBoard logs to S3, run to completion."""
    train = {
        "name": "train",
        "inputs": {"parameters": [{"name": "size"}]},
        "container": {"image": "python:3.11", "command": ["python", "train.py"]},
        "outputs": {"artifacts": [{"name": "tensorboard", "path": "/logs", "archive": {"none": {}}},
                                  {"name": "model", "path": "/model"}]},
    }  # fmt: skip
    steps = [
        [
            {
                "name": f"train-{size}",
                "template": "train",
                "arguments": {"parameters": [{"name": "size", "value": size}]},
            }
            for size in ("small", "large")
        ]
    ]
    sim.argo.script(
        "train",
        run={"duration": 1, "exitCode": 0},
        artifacts=lambda node: {"tensorboard": {"s3": {"key": f"{node.workflow}/{node.display_name}/logs"}}},
    )
    sim.store.create(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"entrypoint": "main", "templates": [{"name": "main", "steps": steps}, train]},
        }
    )
    wait_for(lambda: phase_of_workflow(sim, name) == "Succeeded", WAIT, f"workflow {name} to succeed")


def phase_of_workflow(sim: Simulator, name: str) -> str:
    return str(
        (sim.store.get("workflows.argoproj.io", name, NAMESPACE).get("status") or {}).get("phase") or ""
    )


def fetched_urls(sim: Simulator, deployment: dict[str, Any]) -> list[str]:
    """The artifact URLs in the fetch plan the Deployment's init container mounts from its ConfigMap."""
    [fetcher] = deployment["spec"]["template"]["spec"]["initContainers"]
    assert "--plan=/etc/argoml/fetch-plan/plan.json" in fetcher["args"]
    [volume] = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "fetch-plan"]
    configmap = sim.store.get("configmaps", volume["configMap"]["name"], NAMESPACE)
    return [run["url"] for run in json.loads(configmap["data"]["plan.json"])["runs"]]


def row(name: str) -> Tensorboard | None:
    return Tensorboard.objects.filter(namespace=NAMESPACE, name=name).order_by("-id").first()


def cull(timeout: float = WAIT) -> list[str]:
    """Run the beat task `tensorboard.cull_idle` on the worker, as beat would send it."""
    # Not the current app: shared tasks of later tests must keep sending through the project's app.
    app = Celery("test-sender", broker=redis_url(), backend=redis_url(), set_as_current=False)
    app.conf.update(task_serializer="json", accept_content=["json"], result_serializer="json")
    result: Any = app.send_task("tensorboard.cull_idle", queue="default").get(timeout=timeout)
    return list(result)


def test_a_finished_workflow_becomes_a_ready_tensorboard_stopped_by_delete_and_idle_ones_are_culled(
    sim, worker, owner, admin_client
):
    run_training(sim, "mnist")

    # POST: the Tensorboard appears with the URL in the answer, then its Deployment and Service.
    response = owner.post("/api/tensorboards/", {"namespace": NAMESPACE, "workflow": "mnist"}, format="json")
    assert response.status_code == 201, response.json()
    spawned = response.json()
    assert spawned["url"] == "http://tb-mnist.team-a.svc.cluster.local/tensorboards/team-a/mnist/"
    # The two steps ran in parallel: runs are ordered by start time, then by node name.
    assert sorted(spawned["logdirs"], key=lambda run: run["name"]) == [
        {"name": "train-large", "path": "s3://ml-artifacts/mnist/train-large/logs"},
        {"name": "train-small", "path": "s3://ml-artifacts/mnist/train-small/logs"},
    ]
    wait_for(lambda: all(children(sim, "mnist", NAMESPACE)), WAIT, "the Deployment and the Service")
    deployment, service = children(sim, "mnist", NAMESPACE)
    # S3 artifacts are fetched into the pod by the init container; TensorBoard reads its folders.
    assert fetched_urls(sim, deployment) == [run["path"] for run in spawned["logdirs"]]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "--logdir=/tensorboard-logs",  # one sub-folder per run, named after it
        "--bind_all",
        "--port=6006",
        "--path_prefix=/tensorboards/team-a/mnist",
    ]
    assert service["spec"]["ports"][0]["targetPort"] == "http"

    # The kubelet makes the pod ready: phase Ready in the cluster and in the mirror.
    wait_for(lambda: (row("mnist") or Tensorboard()).phase == "Ready", WAIT, "the mirrored phase Ready")
    assert tensorboard(sim, "mnist", NAMESPACE)["status"]["url"] == spawned["url"]
    mirrored = row("mnist")
    assert (mirrored.url, mirrored.source_kind, mirrored.source_name) == (spawned["url"], "Workflow", "mnist")
    assert list(mirrored.history.values_list("phase", flat=True)) == ["Pending", "Ready"]

    # Spawning again returns the same instance; the API and the admin show it.
    again = owner.post("/api/tensorboards/", {"namespace": NAMESPACE, "workflow": "mnist"}, format="json")
    assert (again.status_code, again.json()["uid"], again.json()["id"]) == (200, spawned["uid"], mirrored.id)
    detail = owner.get(f"/api/tensorboards/{mirrored.id}/").json()
    assert (detail["phase"], detail["url"]) == ("Ready", spawned["url"])
    page = admin_client.get("/admin/tensorboard/tensorboard/").content.decode()
    assert "Workflow mnist" in page
    assert "Ready" in page

    # Culling: an instance nobody opened for three (simulated) hours goes; the one just opened stays.
    forgotten = {"apiVersion": "argoml.io/v1alpha1", "kind": "Tensorboard",
                 "metadata": {"name": "forgotten", "namespace": NAMESPACE},
                 "spec": {"logdirs": [{"name": "old", "path": "s3://ml-artifacts/old/logs"}]}}  # fmt: skip
    sim.store.create(forgotten)
    wait_for(lambda: all(children(sim, "forgotten", NAMESPACE)), WAIT, "the forgotten instance's children")
    # Ready: its reconciles have settled, so none still in flight re-creates a child after the cull
    # (kubesim collects dependents only inside the owner's delete: D-gc-synchronous).
    wait_for(lambda: (row("forgotten") or Tensorboard()).phase == "Ready", WAIT, "the forgotten one Ready")
    assert cull() == [f"{NAMESPACE}/forgotten"]
    assert tensorboard(sim, "forgotten", NAMESPACE) is None
    assert children(sim, "forgotten", NAMESPACE) == (None, None)
    assert tensorboard(sim, "mnist", NAMESPACE) is not None
    wait_for(lambda: row("forgotten").deleted_at is not None, WAIT, "the mirror to mark it deleted")

    # DELETE removes the Tensorboard, its Deployment and its Service; the row keeps its history.
    assert owner.delete(f"/api/tensorboards/{mirrored.id}/").status_code == 202
    wait_for(lambda: tensorboard(sim, "mnist", NAMESPACE) is None, WAIT, "the Tensorboard to go")
    assert children(sim, "mnist", NAMESPACE) == (None, None)
    wait_for(lambda: row("mnist").deleted_at is not None, WAIT, "the mirror to mark it deleted")
    assert owner.get("/api/tensorboards/").json()["results"] == []
