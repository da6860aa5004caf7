"""A workflow whose steps saved their TensorBoard logs on GCS (Argo's default `.tgz`, a zip, and a folder
saved with `archive: none`) opens as one TensorBoard with a run per step, read back from TensorBoard's own
HTTP API.

Real pieces: the Workflow and the service-account key Secret in kubesim, the API and the reconcile building
the Deployment, a local GCS JSON API server that issues tokens only for assertions signed by that key, the
fetcher run as the Deployment's init container says (its command, args and env, the `secretKeyRef` resolved
from kubesim's Secret, the emptyDir replaced by a folder), and TensorBoard from PyPI started with the main
container's args.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube.tests.queue_harness import wait_for
from kubesim.simulator import Simulator
from tensorboard.manifests import plan_configmap_name
from tensorboard.reconcile import reconcile_tensorboard

from .cluster import children, store_workflow
from .eventlogs import tgz_of, write_event_logs, zip_of
from .gcsserver import Server, new_key, running_gcs, service_account_key
from .test_fetch_end_to_end import (
    REPO,
    container_env,
    free_port,
    localised,
    mount_configmap,
    owner,
    runs_served,
)
from .workflows import NAMESPACE, node, workflow

pytestmark = pytest.mark.django_db

__all__ = ["owner"]  # the API client fixture, shared with the S3 end-to-end test

BUCKET = "ml-artifacts-gcs"
KEY = new_key()


@pytest.fixture
def gcs(settings) -> Iterator[Server]:
    with running_gcs(KEY) as server:
        server.store.buckets[BUCKET] = {}
        settings.TENSORBOARD_GCS_ENDPOINT = server.endpoint
        yield server


def run_workflow(sim: Simulator, gcs: Server, tmp_path: Path) -> list[str]:
    """A finished workflow of three steps whose `tensorboard` artifacts are real event files on the GCS
    server (a tgz, a zip, a plain folder), its repository naming the key Secret; returns the step names."""
    key = json.dumps(service_account_key(KEY, gcs.store.token_uri))
    sim.store.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "argo-gcs", "namespace": NAMESPACE},
         "data": {"serviceAccountKey": base64.b64encode(key.encode()).decode()}}
    )  # fmt: skip
    steps = ["train-tgz", "train-zip", "train-plain"]
    write_event_logs([tmp_path / "written" / step / "logs" for step in steps], steps=4)
    written = {step: tmp_path / "written" / step / "logs" for step in steps}
    gcs.store.put(BUCKET, "wf/train-tgz/tensorboard.tgz", tgz_of(written["train-tgz"]))
    gcs.store.put(BUCKET, "wf/train-zip/tensorboard.zip", zip_of(written["train-zip"]))
    for path in written["train-plain"].iterdir():
        gcs.store.put(BUCKET, f"wf/train-plain/tensorboard/{path.name}", path.read_bytes())
    artifacts = {
        "train-tgz": {"name": "tensorboard", "gcs": {"key": "wf/train-tgz/tensorboard.tgz"}},
        "train-zip": {"name": "tensorboard", "gcs": {"key": "wf/train-zip/tensorboard.zip"},
                      "archive": {"zip": {}}},
        "train-plain": {"name": "tensorboard", "gcs": {"key": "wf/train-plain/tensorboard"},
                        "archive": {"none": {}}},
    }  # fmt: skip
    repository = {
        "gcs": {"bucket": BUCKET, "serviceAccountKeySecret": {"name": "argo-gcs", "key": "serviceAccountKey"}}
    }
    nodes = [
        node("wf", step, artifacts[step], started=f"2025-01-01T10:0{index}:00Z")
        for index, step in enumerate(steps)
    ]
    store_workflow(sim, workflow("wf", *nodes, repository=repository))
    return steps


def test_a_workflow_archived_on_gcs_opens_with_a_run_per_step(sim, gcs, owner, tmp_path):
    steps = run_workflow(sim, gcs, tmp_path)

    response = owner.post("/api/tensorboards/", {"namespace": NAMESPACE, "workflow": "wf"}, format="json")
    assert response.status_code == 201, response.json()
    assert [(run["path"], run.get("archive")) for run in response.json()["logdirs"]] == [
        (f"gs://{BUCKET}/wf/train-tgz/tensorboard.tgz", "tar"),
        (f"gs://{BUCKET}/wf/train-zip/tensorboard.zip", "zip"),
        (f"gs://{BUCKET}/wf/train-plain/tensorboard", None),
    ]
    reconcile_tensorboard(NAMESPACE, "wf")
    deployment, _service = children(sim, "wf", NAMESPACE)
    pod = deployment["spec"]["template"]["spec"]
    [fetcher] = pod["initContainers"]
    [main] = pod["containers"]

    # The init container, run as the Deployment says: our manage.py with its args, env and plan only.
    report = tmp_path / "termination-log"
    mount_configmap(sim, plan_configmap_name("wf"), tmp_path / "fetch-plan")
    command = [sys.executable, str(REPO / "manage.py"), *fetcher["command"][2:]]
    fetched = subprocess.run(
        [*command, *localised(fetcher["args"], tmp_path)],
        env=container_env(sim, fetcher),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert fetched.returncode == 0, fetched.stderr
    assert "3 runs: 3 fetched, 0 unchanged, 0 failed" in fetched.stdout, fetched.stdout + fetched.stderr
    assert json.loads(report.read_text())["failed"] == []
    assert gcs.store.tokens  # the fetcher signed a token request with the Secret's key, and used the token

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
        expected = sorted(steps)
        wait_for(lambda: runs_served(url) == expected, 120, "TensorBoard to list one run per step on GCS")
    finally:
        server.terminate()
        server.wait(30)
