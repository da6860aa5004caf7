"""A sweep whose trials archived their TensorBoard logs as `.tgz` (Argo's default) on an S3-compatible store
opens as one TensorBoard with a run per trial, read back from TensorBoard's own HTTP API.

Real pieces: the sweep and its batch Workflows in kubesim, the API and the reconcile building the Deployment,
a local S3 server checking signatures, the fetcher run as the Deployment's init container says (its command,
args and env, the `secretKeyRef`s resolved from kubesim's Secrets, the plan's ConfigMap written out as the
kubelet mounts it, the emptyDir replaced by a folder), and TensorBoard from PyPI started with the main
container's args. One trial's archive is missing: the others are shown, the fetcher's report reaches the
Tensorboard's status through the pod's termination message, and once the archive appears a second fetch
pass adds it as a run the running TensorBoard lists without a restart.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from hyperparam.manifests import LABEL_BATCH, LABEL_SWEEP_UID
from hyperparam.tests.conftest import make_spec
from kube.tests.queue_harness import wait_for
from kubesim.simulator import Simulator
from tensorboard.manifests import FETCH_ROOT, PLAN_MOUNT, TERMINATION_LOG, plan_configmap_name
from tensorboard.reconcile import reconcile_tensorboard

from .cluster import children, store_workflow, tensorboard
from .eventlogs import tgz_of, write_event_logs
from .s3server import S3Server, running_s3
from .workflows import NAMESPACE, node, s3_artifact, workflow

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
BUCKET = "ml-artifacts"
CREDENTIALS = {"accesskey": "sweep-access", "secretkey": "sweep-secret"}


@pytest.fixture
def s3() -> Iterator[S3Server]:
    with running_s3(CREDENTIALS["accesskey"], CREDENTIALS["secretkey"]) as server:
        server.store.buckets[BUCKET] = {}
        yield server


@pytest.fixture
def owner() -> APIClient:
    user = User.objects.create_user("owner")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


def run_sweep(sim: Simulator, s3: S3Server, tmp_path: Path, *, missing: str) -> dict[str, str]:
    """A finished sweep of two batches of three trials whose `tensorboard` artifacts are `.tgz` archives of
    real event files on the S3 server (all but `missing`, written but not uploaded); returns trial → key."""
    repository = {
        "s3": {
            "bucket": BUCKET,
            "endpoint": s3.endpoint,
            "insecure": True,
            "accessKeySecret": {"name": "sweep-cred", "key": "accesskey"},
            "secretKeySecret": {"name": "sweep-cred", "key": "secretkey"},
        }
    }
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in CREDENTIALS.items()}
    sim.store.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sweep-cred", "namespace": NAMESPACE},
         "data": encoded}
    )  # fmt: skip
    hpw = sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "lr-sweep", "namespace": NAMESPACE}, "spec": make_spec()}
    )  # fmt: skip
    sim.store.patch("hyperparamworkflows.argoml.io", "lr-sweep", {"status": {"phase": "Succeeded"}},
                    namespace=NAMESPACE, subresource="status")  # fmt: skip
    keys = {f"trial-{batch}-{index}": f"lr-sweep-{batch}/trial-{batch}-{index}/tensorboard.tgz"
            for batch in (0, 1) for index in range(3)}  # fmt: skip
    uploaded = [trial for trial in keys if trial != missing]
    write_event_logs([tmp_path / "written" / trial / "logs" for trial in keys], steps=4)
    for trial in uploaded:
        s3.store.put(BUCKET, keys[trial], tgz_of(tmp_path / "written" / trial / "logs"))
    for batch in (0, 1):
        name = f"lr-sweep-{batch}"
        nodes = [
            node(
                name,
                trial,
                s3_artifact(keys[trial], archive=None),
                started=f"2025-01-01T1{batch}:0{index}:00Z",
            )
            for index, trial in enumerate(trial for trial in keys if trial.startswith(f"trial-{batch}-"))
        ]
        labels = {LABEL_SWEEP_UID: hpw["metadata"]["uid"], LABEL_BATCH: str(batch)}
        store_workflow(sim, workflow(name, *nodes, labels=labels, repository=repository))
    return keys


def secret_value(sim: Simulator, reference: dict[str, Any]) -> str:
    secret = sim.store.get("secrets", reference["name"], NAMESPACE)
    return base64.b64decode(secret["data"][reference["key"]]).decode()


def container_env(sim: Simulator, container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet would give it (secretKeyRefs resolved), nothing else."""
    env = {"PATH": os.environ["PATH"]}
    for item in container.get("env") or ():
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            env[item["name"]] = secret_value(sim, item["valueFrom"]["secretKeyRef"])
    return env


def localised(args: list[str], tmp_path: Path) -> list[str]:
    """The pod's paths replaced by the test's: the emptyDir and the ConfigMap mount by folders, the
    termination log by a file."""
    return [
        arg.replace(FETCH_ROOT, str(tmp_path / "emptydir"))
        .replace(PLAN_MOUNT, str(tmp_path / "fetch-plan"))
        .replace(TERMINATION_LOG, str(tmp_path / "termination-log"))
        for arg in args
    ]


def mount_configmap(sim: Simulator, name: str, folder: Path) -> None:
    """Each key of the ConfigMap as a file of the folder, as the kubelet mounts a configMap volume."""
    folder.mkdir(exist_ok=True)
    for key, value in sim.store.get("configmaps", name, NAMESPACE)["data"].items():
        (folder / key).write_text(value)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def runs_served(url: str) -> list[str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return sorted(json.loads(response.read()))
    except OSError:
        return []


def test_a_sweep_archived_on_s3_opens_as_one_tensorboard_with_a_run_per_trial(sim, s3, owner, tmp_path):
    trials = run_sweep(sim, s3, tmp_path, missing="trial-1-2")

    response = owner.post(
        "/api/tensorboards/", {"namespace": NAMESPACE, "workflow": "lr-sweep", "kind": "HyperparamWorkflow"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    assert {run["archive"] for run in response.json()["logdirs"]} == {"tar"}
    reconcile_tensorboard(NAMESPACE, "lr-sweep-hpw")
    deployment, _service = children(sim, "lr-sweep-hpw", NAMESPACE)
    pod = deployment["spec"]["template"]["spec"]
    [fetcher] = pod["initContainers"]
    [main] = pod["containers"]  # a finished sweep: no sync sidecar

    # The init container, run as the Deployment says: our manage.py with its args, env and plan only.
    report = tmp_path / "termination-log"
    mount_configmap(sim, plan_configmap_name("lr-sweep-hpw"), tmp_path / "fetch-plan")
    assert fetcher["command"][:2] == ["python", "/app/manage.py"]
    command = [sys.executable, str(REPO / "manage.py"), *fetcher["command"][2:]]

    def fetch_pass() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *localised(fetcher["args"], tmp_path)],
            env=container_env(sim, fetcher),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    fetched = fetch_pass()
    assert fetched.returncode == 0, fetched.stderr
    assert "6 runs: 5 fetched, 0 unchanged, 1 failed" in fetched.stdout
    outcome = json.loads(report.read_text())
    assert [(item["run"], item["reason"].split(":")[0]) for item in outcome["failed"]] == [
        ("trial-1-2", "NoSuchKey")
    ]

    # TensorBoard from PyPI with the main container's args (its port aside), read through its HTTP API.
    port = free_port()
    args = [arg if not arg.startswith("--port=") else f"--port={port}" for arg in main["args"]]
    binary = Path(sys.executable).parent / main["command"][0]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    server = subprocess.Popen(
        [str(binary), *localised(args, tmp_path)],
        cwd=tmp_path,  # not the repository: there `import tensorboard` is our Django app
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        prefix = next(arg.split("=", 1)[1] for arg in args if arg.startswith("--path_prefix="))
        url = f"http://127.0.0.1:{port}{prefix}/data/runs"
        # Each fetched run is a sub-folder of the logdir named after the trial: TensorBoard's run name.
        expected = sorted(trial for trial in trials if trial != "trial-1-2")
        wait_for(lambda: runs_served(url) == expected, 120, "TensorBoard to list one run per fetched trial")

        # The missing archive appears; the next pass (what the sync sidecar runs every N seconds) fetches
        # it, and the TensorBoard already running lists it on its next reload: no restart.
        s3.store.put(BUCKET, trials["trial-1-2"], tgz_of(tmp_path / "written" / "trial-1-2" / "logs"))
        again = fetch_pass()
        assert "6 runs: 1 fetched, 5 unchanged, 0 failed" in again.stdout, again.stderr
        wait_for(lambda: runs_served(url) == sorted(trials), 120, "TensorBoard to list the late trial")
    finally:
        server.terminate()
        server.wait(30)

    # The kubelet keeps the fetcher's report as its termination message; the reconcile puts it in the status.
    sim.advance(5)
    [running] = sim.store.list("pods", NAMESPACE, label_selector="argoml.io/tensorboard=lr-sweep-hpw")[
        "items"
    ]
    [status] = running["status"]["initContainerStatuses"]
    first_report = json.dumps(outcome)  # the init container's, from its one pass
    status["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "message": first_report}}
    sim.store.patch("pods", running["metadata"]["name"], {"status": {"initContainerStatuses": [status]}},
                    namespace=NAMESPACE, subresource="status")  # fmt: skip
    reconcile_tensorboard(NAMESPACE, "lr-sweep-hpw")
    written = tensorboard(sim, "lr-sweep-hpw", NAMESPACE)["status"]
    assert written["phase"] == "Ready"
    assert [problem["run"] for problem in written["fetchProblems"]] == ["trial-1-2"]
