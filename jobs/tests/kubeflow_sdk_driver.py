"""Kubeflow's v1 SDK making a user's calls, run by the SDK's own virtualenv (.venv-kubeflow-sdk: it needs
kubernetes<36, ours is 37) for jobs/tests/test_kubeflow_sdk.py. No Django, nothing of ours: only what a
Kubeflow user imports.

    python kubeflow_sdk_driver.py <kubeconfig> <namespace> <scenario> < parameters.json

prints one JSON object: {"calls": [{"call": name, "ok": true, "value": ...} | {..., "ok": false, "error"}]}.
Every call is recorded, passing or not, so the test can say which calls work.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from kubeflow.training import TrainingClient
from kubeflow.training.utils import utils

WAIT = 60


class Calls:
    def __init__(self) -> None:
        self.recorded: list[dict[str, Any]] = []

    def __call__(self, name: str, call: Callable[[], Any], shown: Callable[[Any], Any] = lambda v: v) -> Any:
        try:
            value = call()
        except Exception as error:  # the SDK's failure is the observation
            self.recorded.append({"call": name, "ok": False, "error": f"{type(error).__name__}: {error}"})
            return None
        self.recorded.append({"call": name, "ok": True, "value": shown(value)})
        return value


def conditions(values: Any) -> list[list[str]]:
    return [[c.type, c.status, c.reason or "", c.message or ""] for c in values or []]


def names(jobs: Any) -> list[str]:
    return [job.metadata.name for job in jobs]


def from_manifest(sdk: TrainingClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """A job written as a manifest, through every call of the SDK's job lifecycle."""
    manifest, kind = parameters["manifest"], parameters["manifest"]["kind"]
    name = manifest["metadata"]["name"]
    model = calls(
        "the SDK's model of the manifest",
        lambda: sdk.api_client.deserialize(utils.FakeResponse(manifest), f"KubeflowOrgV1{kind}"),
        lambda _: None,
    )
    calls("create_job", lambda: sdk.create_job(model), lambda _: None)
    calls(
        "wait_for_job_conditions(Running)",
        lambda: sdk.wait_for_job_conditions(
            name, job_kind=kind, expected_conditions={"Running"}, wait_timeout=WAIT, polling_interval=1
        ),
        lambda job: job.metadata.name,
    )
    calls("is_job_created", lambda: sdk.is_job_created(name, job_kind=kind))
    calls("is_job_running", lambda: sdk.is_job_running(name, job_kind=kind))
    calls("get_job_pod_names", lambda: sorted(sdk.get_job_pod_names(name)))
    calls("get_job_pod_names(is_master)", lambda: sdk.get_job_pod_names(name, is_master=True))
    calls(
        "get_job_pod_names(worker 1)",
        lambda: sdk.get_job_pod_names(name, replica_type="worker", replica_index=1),
    )
    job = calls(
        "wait_for_job_conditions(Succeeded)",
        lambda: sdk.wait_for_job_conditions(name, job_kind=kind, wait_timeout=WAIT, polling_interval=1),
        lambda job: job.metadata.name,
    )
    calls("is_job_succeeded", lambda: sdk.is_job_succeeded(name, job_kind=kind))
    calls("is_job_failed", lambda: sdk.is_job_failed(name, job_kind=kind))
    calls("is_job_restarting", lambda: sdk.is_job_restarting(name, job_kind=kind))
    calls("get_job_conditions", lambda: sdk.get_job_conditions(name, job_kind=kind), conditions)
    calls("get_job_conditions(job)", lambda: sdk.get_job_conditions(job=job), conditions)
    calls("get_job_logs", lambda: sdk.get_job_logs(name, job_kind=kind)[0])
    fetched = calls(
        "get_job",
        lambda: sdk.get_job(name, job_kind=kind),
        lambda job: {"uid": job.metadata.uid, "cleanPodPolicy": job.spec.run_policy.clean_pod_policy},
    )
    if fetched is not None:
        fetched.metadata.labels = {"team": "vision"}
        calls("update_job", lambda: sdk.update_job(fetched, name, job_kind=kind), lambda _: None)
        calls("get_job(labels)", lambda: sdk.get_job(name, job_kind=kind), lambda job: job.metadata.labels)
    calls("list_jobs", lambda: sdk.list_jobs(job_kind=kind), names)
    calls("delete_job", lambda: sdk.delete_job(name, job_kind=kind), lambda _: None)
    calls("list_jobs(after delete)", lambda: _until_empty(lambda: sdk.list_jobs(job_kind=kind)), names)


def _until_empty(read: Callable[[], list[Any]]) -> list[Any]:
    deadline = time.monotonic() + WAIT
    while (listed := read()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return listed


def train(parameters):  # the SDK ships this function's source to the pods
    print("training with", parameters)


def from_function(sdk: TrainingClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """A job made by the SDK from a training function and an image, with replica counts."""
    kind, name = parameters["kind"], parameters["name"]
    calls(
        "create_job(train_func)",
        lambda: sdk.create_job(
            name=name,
            job_kind=kind,
            base_image="example.io/train:1",
            train_func=train,
            parameters={"lr": 0.1},
            **parameters["counts"],
        ),
        lambda _: None,
    )
    calls(
        "wait_for_job_conditions(Succeeded)",
        lambda: sdk.wait_for_job_conditions(name, job_kind=kind, wait_timeout=WAIT, polling_interval=1),
        lambda job: job.metadata.name,
    )
    calls("get_job_pod_names", lambda: sorted(sdk.get_job_pod_names(name)))
    calls(
        "get_job_pods(is_master)",
        lambda: sdk.get_job_pods(name, is_master=True),
        lambda pods: " ".join(pods[0].spec.containers[0].args or []),
    )


def list_only(sdk: TrainingClient, calls: Calls, parameters: dict[str, Any]) -> None:
    calls("list_jobs", lambda: sdk.list_jobs(job_kind=parameters["kind"]), names)


SCENARIOS = {"manifest": from_manifest, "function": from_function, "list": list_only}


def main(kubeconfig: str, namespace: str, scenario: str) -> dict[str, Any]:
    parameters = json.load(sys.stdin)
    calls = Calls()
    sdk = calls(
        "TrainingClient",
        lambda: TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=parameters["kind"]),
        lambda _: None,
    )
    if sdk is not None:
        SCENARIOS[scenario](sdk, calls, parameters)
    return {"calls": calls.recorded}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
