"""Kubeflow's v2 Python SDK (`kubeflow` 0.5.0 from PyPI, TrainerClient, unchanged) against kubesim, with our
controller worker running TrainJobs from the runtimes we ship: what a Kubeflow user's notebook does, call by
call.

The SDK runs in the SDKs' virtualenv (.venv-kubeflow-sdk, `make` builds it from
requirements-kubeflow-sdk.txt): it requires kubernetes<36 and cannot read the models of ours (37).
kubeflow_sdk_driver.py makes the calls there and reports each one; these tests assert on the reports. The
simulator runs on the real clock, so the SDK's own polling works as against a cluster; the kubelet runs every
`node` container of a test's namespace for a few seconds, printing a few lines, whatever the command.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from django.db import connection

from argoml_site.crds import TRAINER_RESOURCES
from jobs.tests.controller_worker import REPO, leading_controller_worker
from kube import ratelimit
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.errors import ApiError
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer import public
from trainer.runtimes.catalog import ready_made_runtimes
from trainer.tests.cluster import get_train_job
from workflows import safeyaml

pytestmark = pytest.mark.django_db

REDIS_DB = int(os.environ.get("TRAINER_SDK_TEST_REDIS_DB", "11"))
# Kubeflow Trainer v2.3's manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml, byte for byte.
TORCHTUNE_RUNTIME = Path(__file__).with_name("kubeflow") / "torchtune-llama3.2-1b.yaml"
TRAIN_JOBS = "trainjobs.trainer.kubeflow.org"
OUTPUT = ["epoch 0", "epoch 1", "saved the model"]
_namespaces = count(1)


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the SDK tests share their database with a worker process: PostgreSQL only")
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def create_once(sim: Simulator, manifest: dict[str, Any]) -> None:
    try:
        sim.store.create(manifest)
    except ApiError as error:
        if error.code != 409:
            raise


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}", decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def sim(redis) -> Iterator[Simulator]:
    """Trainer's CRDs and the runtimes we ship, as the install commands apply them."""
    with running_simulator(kubelet=True) as simulator:
        for resource in TRAINER_RESOURCES:
            create_once(simulator, resource.manifest())
        for runtime in ready_made_runtimes():
            create_once(simulator, runtime)
        for manifest in public.manifests():
            create_once(simulator, manifest)
        yield simulator


@pytest.fixture(scope="module")
def worker(sim, redis, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:
    """`celery worker -Q reconcile` with the controllers on, the TrainJob controller among them, writing
    through the shipped rate limiter."""
    with django_db_blocker.unblock():
        env = {
            **os.environ,
            **controller_worker_env(
                "argoml-trainer-sdk-test",
                TRAINER_ENABLED="true",
                # The shipped write rate limiter, not the harness's unthrottled one.
                KUBE_WRITE_QPS=str(ratelimit.DEFAULT_WRITE_QPS),
                KUBE_WRITE_BURST=str(ratelimit.DEFAULT_WRITE_BURST),
            ),
            "DATABASE_URL": database_url(),
            "REDIS_URL": f"redis://{REDIS_HOST}/{REDIS_DB}",
            "KUBECONFIG": str(sim.kubeconfig_path),
        }
    logdir = tmp_path_factory.mktemp("trainer-sdk-worker")
    with leading_controller_worker("trainer-sdk", env, logdir, django_db_blocker) as running:
        yield running


@pytest.fixture
def ns(sim, worker) -> Iterator[str]:
    name = f"trainer-sdk-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    remove = sim.kubelet.script({"node": {"duration": 4, "output": OUTPUT}}, namespace=name)
    yield name
    remove()


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


def steps(job: dict[str, Any]) -> list[tuple[str, str]]:
    return [(step["name"], step["status"]) for step in job["steps"]]


def torch_as_a_training_runtime(namespace: str, name: str) -> dict[str, Any]:
    """The torch-distributed we ship, as a user's TrainingRuntime in `namespace`."""
    shipped = {runtime["metadata"]["name"]: runtime for runtime in ready_made_runtimes()}
    runtime = copy.deepcopy(shipped["torch-distributed"])
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {**runtime["metadata"], "name": name, "namespace": namespace}
    return runtime


def node_container(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == "node")


def test_the_sdk_lists_the_runtimes_we_ship_and_prefers_a_namespaced_one(sim, ns):
    sim.store.create(torch_as_a_training_runtime(ns, "torch-small"))

    calls = run_sdk(sim, ns, "runtimes", runtime="torch-distributed")
    missing = calls.pop("get_runtime(missing)")
    seen = values(calls)

    listed = {runtime["name"]: runtime for runtime in seen["list_runtimes"]}
    shipped = sorted(r["metadata"]["name"] for r in ready_made_runtimes())
    assert sorted(listed) == sorted([*shipped, "torch-small"])
    assert listed["torch-small"]["kind"] == "TrainingRuntime"
    torch = seen["get_runtime(torch-distributed)"]
    assert torch == listed["torch-distributed"]
    assert (torch["kind"], torch["framework"], torch["trainer_type"]) == (
        "ClusterTrainingRuntime", "torch", "CustomTrainer"
    )  # fmt: skip
    assert torch["num_nodes"] == 1
    assert torch["command"][:2] == ["bash", "-c"]
    assert "torchrun" in torch["command"][2]
    assert not missing["ok"]
    assert "Failed to get Runtime: no-such-runtime" in missing["error"]
    # It trains a one-node job that prints Python's packages, prints the job's log, and deletes the job.
    assert seen["get_runtime_packages"] == OUTPUT
    assert seen["list_jobs(after get_runtime_packages)"] == "empty"


def test_a_training_function_runs_on_its_nodes_through_every_sdk_call(sim, ns):
    seen = values(
        run_sdk(
            sim, ns, "custom_trainer", runtime="torch-distributed", name="mnist", num_nodes=2,
            resources_per_node={"cpu": 2, "memory": "2Gi"},
        )
    )  # fmt: skip

    assert seen["train(CustomTrainer)"] == "mnist"
    # verify_backend found Trainer's public ConfigMap, so the SDK warned about nothing.
    assert seen["logged warnings"] == []
    running = seen["wait_for_job_status(Running)"]
    assert running["status"] == "Running"
    assert running["num_nodes"] == 2
    assert steps(running) == [("node-0", "Running"), ("node-1", "Running")]
    assert seen["get_job_logs(follow)"] == OUTPUT
    done = seen["get_job"]
    assert done["status"] == "Complete"
    assert done["runtime"] == "torch-distributed"
    assert steps(done) == [("node-0", "Succeeded"), ("node-1", "Succeeded")]
    assert {step["device"] for step in done["steps"]} == {"cpu"}
    assert seen["get_job_logs"] == OUTPUT
    assert seen["get_job_logs(node-1)"] == OUTPUT

    trainer = sim.store.get(TRAIN_JOBS, "mnist", ns)["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    assert trainer["command"][:2] == ["bash", "-c"]
    assert "torchrun" in trainer["command"][2]
    assert "train(**{'epochs': 2, 'learning_rate': 0.1})" in trainer["command"][2]
    assert trainer["resourcesPerNode"]["limits"] == {"cpu": 2, "memory": "2Gi"}

    pods = {step["name"]: step["pod_name"] for step in done["steps"]}
    node = node_container(sim.store.get("pods", pods["node-0"], ns))
    assert node["command"] == trainer["command"]
    assert {"name": "TEAM", "value": "vision"} in node["env"]
    assert node["resources"]["limits"] == {"cpu": 2, "memory": "2Gi"}

    # What a kubelet records about another pod of the namespace, which the SDK must leave out.
    sim.store.create({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "unrelated.pulled", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": "unrelated", "namespace": ns},
        "reason": "Pulled", "message": "Pulled image", "type": "Normal", "source": {"component": "kubelet"},
        "firstTimestamp": "2026-11-28T02:00:00Z", "lastTimestamp": "2026-11-28T02:00:00Z", "count": 1,
    })  # fmt: skip

    after = run_sdk(sim, ns, "events_and_delete", name="mnist")
    gone = after.pop("get_job(after delete)")
    seen = values(after)
    # The controller's own Events about the TrainJob, recorded as Trainer's recorder does (core v1).
    created = [event for event in seen["get_job_events"] if event[2] == "SuccessfulCreatePod"]
    assert created
    assert {(event[0], event[1]) for event in created} == {("TrainJob", "mnist")}
    named = {name for event in created for name in re.findall(r"mnist-[\w-]+", event[3])}
    assert set(pods.values()) <= named
    assert all(event[1] != "unrelated" for event in seen["get_job_events"])
    assert "mnist" in seen["list_jobs"]
    assert not gone["ok"]
    assert "Failed to get TrainJob" in gone["error"]
    wait_for(lambda: not sim.store.list("pods", ns)["items"], 30, "the job's pods to go with it")


def test_an_image_runs_on_its_nodes_under_the_name_the_sdk_generates(sim, ns):
    seen = values(
        run_sdk(
            sim, ns, "container_trainer", runtime="torch-distributed", image="example.io/train:1",
            num_nodes=3, resources_per_node={"cpu": "500m"},
        )
    )  # fmt: skip

    name = seen["train(CustomTrainerContainer)"]
    assert re.fullmatch(r"[a-z][0-9a-f]{11}", name)
    done = seen["wait_for_job_status(Complete)"]
    assert steps(done) == [("node-0", "Succeeded"), ("node-1", "Succeeded"), ("node-2", "Succeeded")]
    assert seen["list_jobs"] == [name]
    assert seen["list_jobs(runtime)"] == [name]
    assert seen["list_jobs(another runtime)"] == []

    trainer = sim.store.get(TRAIN_JOBS, name, ns)["spec"]["trainer"]
    assert "command" not in trainer
    node = node_container(sim.store.get("pods", done["steps"][2]["pod_name"], ns))
    assert node["image"] == "example.io/train:1"
    assert {"name": "EPOCHS", "value": "2"} in node["env"]
    assert node["resources"]["limits"] == {"cpu": "500m"}


def test_a_crashing_training_stops_the_wait_for_complete_at_failed(sim, ns):
    """A namespaced runtime whose pods are not restarted in place, so a crash fails the job at once."""
    runtime = torch_as_a_training_runtime(ns, "torch-once")
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["restartPolicy"] = "Never"
    sim.store.create(runtime)
    crash = {"node": {"duration": 1, "exitCode": 1, "output": ["CUDA out of memory"]}}
    sim.kubelet.script(crash, namespace=ns)

    # One node: with two, the one that crashes second may still run when the first fails the job, and a
    # failed TrainJob's running pods are deleted (as JobSet deletes its active Jobs), logs and all.
    calls = run_sdk(sim, ns, "failing_trainer", runtime="torch-once", image="example.io/train:1", num_nodes=1)
    refused = calls.pop("wait_for_job_status(Complete)")
    seen = values(calls)

    name = seen["train(CustomTrainerContainer)"]
    assert not refused["ok"]
    assert refused["error"] == f"RuntimeError: TrainJob {name} is Failed"
    failed = seen["wait_for_job_status(Failed)"]
    assert failed["status"] == "Failed"
    assert "Failed" in {step["status"] for step in failed["steps"]}
    assert seen["get_job_logs"] == ["CUDA out of memory"]


def test_a_trainer_restarted_in_place_fails_at_its_backoff_limit_and_the_wait_says_failed(sim, ns):
    """Trainer's torch runtime as shipped restarts a crashing trainer in place (OnFailure); its Job's
    `backoffLimit` (1 here, 6 by default) ends the loop, so the SDK's wait for Complete raises "is Failed"
    instead of timing out (issue 32)."""
    runtime = torch_as_a_training_runtime(ns, "torch-retry-once")
    job_template = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job_template["template"]["spec"].get("restartPolicy", "OnFailure") == "OnFailure"
    job_template["backoffLimit"] = 1
    sim.store.create(runtime)
    sim.kubelet.script({"node": {"duration": 1, "exitCode": 1}}, namespace=ns)

    calls = run_sdk(
        sim, ns, "failing_trainer", runtime="torch-retry-once", image="example.io/train:1", num_nodes=1
    )
    refused = calls.pop("wait_for_job_status(Complete)")
    seen = values(calls)

    name = seen["train(CustomTrainerContainer)"]
    assert refused["error"] == f"RuntimeError: TrainJob {name} is Failed"
    assert seen["wait_for_job_status(Failed)"]["status"] == "Failed"
    failed = get_train_job(sim, ns, name)
    assert failed is not None
    assert [(step["name"], step["failed"]) for step in failed["status"]["jobsStatus"]] == [("node", 1)]


def test_the_sdks_builtin_torchtune_trainer_runs_the_command_trainer_builds(sim, ns):
    """Trainer v2.3's torchtune-llama3.2-1b runtime, unchanged (its nodes ask for two GPUs): the SDK's
    `tune run batch_size=2 epochs=1` becomes the distributed recipe with its config, the rendezvous at the
    first node and the runtime's output and model paths (issue 32: the pods ran the bare `tune run`)."""
    create_once(sim, safeyaml.load(TORCHTUNE_RUNTIME.read_text()))
    calls = run_sdk(sim, ns, "builtin_torchtune", runtime="torchtune-llama3.2-1b")
    name = values(calls)["train(BuiltinTrainer)"]
    node = node_container(sim.store.get("pods", f"{name}-node-0-0", ns))
    assert node["command"] == [
        "tune",
        "run",
        f"--rdzv_endpoint={name}-node-0-0.{name}:29500",
        "full_finetune_distributed",
        "--config",
        "llama3_2/1B_full",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert node["args"] == ["batch_size=2", "epochs=1"]
