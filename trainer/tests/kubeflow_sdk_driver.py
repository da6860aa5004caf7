"""Kubeflow's v2 SDK (`kubeflow` 0.5.0, TrainerClient) making a user's calls, run by the SDKs' own virtualenv
(.venv-kubeflow-sdk: it needs kubernetes<36, ours is 37) for trainer/tests/test_kubeflow_trainer_sdk.py. No
Django, nothing of ours: only what a Kubeflow user imports.

    python kubeflow_sdk_driver.py <kubeconfig> <namespace> <scenario> < parameters.json

prints one JSON object: {"calls": [{"call": name, "ok": true, "value": ...} | {..., "ok": false, "error"}]}.
Every call is recorded, passing or not, so the test can say which calls work.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import (
    BuiltinTrainer,
    CustomTrainer,
    CustomTrainerContainer,
    TorchTuneConfig,
    TrainerClient,
)
from kubeflow.trainer.options import Name

WAIT = 60


class Calls:
    def __init__(self) -> None:
        self.recorded: list[dict[str, Any]] = []

    def __call__(self, name: str, call: Callable[[], Any], shown: Callable[[Any], Any] = lambda v: v) -> Any:
        try:
            value = call()
        except Exception as error:  # the SDK's failure is the observation
            self.recorded.append({"call": name, "ok": False, "error": described(error)})
            return None
        self.recorded.append({"call": name, "ok": True, "value": shown(value)})
        return value


def described(error: BaseException) -> str:
    """The error and the one the SDK wrapped (its RuntimeErrors hide the API's answer in __cause__)."""
    text = f"{type(error).__name__}: {error}"
    if error.__cause__ is not None:
        text += f" (caused by {type(error.__cause__).__name__}: {error.__cause__})"
    return text


def runtime(value: Any) -> dict[str, Any]:
    trainer = value.trainer
    return {
        "name": value.name,
        "kind": value.kind.value,
        "framework": trainer.framework,
        "trainer_type": trainer.trainer_type.value,
        "image": trainer.image,
        "num_nodes": trainer.num_nodes,
        "device": trainer.device,
        "device_count": trainer.device_count,
        "command": list(trainer.command),
    }


def job(value: Any) -> dict[str, Any]:
    return {
        "name": value.name,
        "runtime": value.runtime.name,
        "num_nodes": value.num_nodes,
        "status": value.status,
        "steps": [
            {
                "name": step.name,
                "status": step.status,
                "pod_name": step.pod_name,
                "device": step.device,
                "device_count": step.device_count,
            }
            for step in value.steps
        ],
    }


def names(jobs: Any) -> list[str]:
    return [value.name for value in jobs]


def train(epochs, learning_rate):  # the SDK ships this function's source to the nodes
    for epoch in range(epochs):
        print(f"epoch {epoch} lr {learning_rate}")


def runtimes(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    calls("list_runtimes", sdk.list_runtimes, lambda values: [runtime(value) for value in values])
    calls(f"get_runtime({parameters['runtime']})", lambda: sdk.get_runtime(parameters["runtime"]), runtime)
    calls("get_runtime(missing)", lambda: sdk.get_runtime("no-such-runtime"), runtime)
    calls(
        "get_runtime_packages",
        lambda: printed(lambda: sdk.get_runtime_packages(sdk.get_runtime(parameters["runtime"]))),
    )
    calls(
        "list_jobs(after get_runtime_packages)",
        lambda: _until(lambda: not sdk.list_jobs()),
        lambda _: "empty",
    )


def printed(call: Callable[[], Any]) -> list[str]:
    """What `call` prints (the SDK prints some answers), kept off the stdout this driver reports on."""
    with contextlib.redirect_stdout(io.StringIO()) as output:
        call()
    return output.getvalue().splitlines()


def wait_for_complete(sdk: TrainerClient, calls: Calls, name: str) -> None:
    """The user's wait for the job to complete (the SDK raises if it fails first), recorded as a call."""
    calls(
        "wait_for_job_status(Complete)",
        lambda: sdk.wait_for_job_status(name, timeout=WAIT, polling_interval=1),
        job,
    )


def custom_trainer(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """A training function on `num_nodes` nodes, followed from Running to Complete, logs streamed."""
    name = calls(
        "train(CustomTrainer)",
        lambda: sdk.train(
            runtime=parameters["runtime"],
            trainer=CustomTrainer(
                func=train,
                func_args={"epochs": 2, "learning_rate": 0.1},
                num_nodes=parameters["num_nodes"],
                resources_per_node=parameters["resources_per_node"],
                env={"TEAM": "vision"},
            ),
            options=[Name(parameters["name"])],
        ),
    )
    if name is None:
        return
    calls(
        "wait_for_job_status(Running)",
        lambda: sdk.wait_for_job_status(name, status={"Running"}, timeout=WAIT, polling_interval=1),
        job,
    )
    calls("get_job(running)", lambda: sdk.get_job(name), job)
    calls("get_job_logs(follow)", lambda: list(sdk.get_job_logs(name, follow=True)))
    wait_for_complete(sdk, calls, name)
    calls("get_job", lambda: sdk.get_job(name), job)
    calls("get_job_logs", lambda: list(sdk.get_job_logs(name)))
    calls("get_job_logs(node-1)", lambda: list(sdk.get_job_logs(name, step="node-1")))


def container_trainer(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """An image that encapsulates its training, under the name the SDK generates."""
    name = calls(
        "train(CustomTrainerContainer)",
        lambda: sdk.train(
            runtime=sdk.get_runtime(parameters["runtime"]),
            trainer=CustomTrainerContainer(
                image=parameters["image"],
                num_nodes=parameters["num_nodes"],
                resources_per_node=parameters["resources_per_node"],
                env={"EPOCHS": "2"},
            ),
        ),
    )
    if name is None:
        return
    wait_for_complete(sdk, calls, name)
    calls("list_jobs", sdk.list_jobs, names)
    calls(
        "list_jobs(runtime)",
        lambda: sdk.list_jobs(runtime=sdk.get_runtime(parameters["runtime"])),
        names,
    )
    calls(
        "list_jobs(another runtime)",
        lambda: sdk.list_jobs(runtime=sdk.get_runtime("jax-distributed")),
        names,
    )


def failing_trainer(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """An image whose training crashes: waiting for Complete stops at Failed, as the SDK promises."""
    name = calls(
        "train(CustomTrainerContainer)",
        lambda: sdk.train(
            runtime=parameters["runtime"],
            trainer=CustomTrainerContainer(image=parameters["image"], num_nodes=parameters["num_nodes"]),
        ),
    )
    if name is None:
        return
    wait_for_complete(sdk, calls, name)
    calls(
        "wait_for_job_status(Failed)",
        lambda: sdk.wait_for_job_status(name, status={"Failed"}, timeout=WAIT, polling_interval=1),
        job,
    )
    calls("get_job_logs", lambda: list(sdk.get_job_logs(name)))


def builtin_torchtune(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    """Kubeflow's BuiltinTrainer with a TorchTuneConfig on Trainer's torchtune runtime: the SDK sends only
    `tune run` and the config's overrides; the controller completes the command, as Trainer's plugin does."""
    name = calls(
        "train(BuiltinTrainer)",
        lambda: sdk.train(
            runtime=sdk.get_runtime(parameters["runtime"]),
            trainer=BuiltinTrainer(config=TorchTuneConfig(batch_size=2, epochs=1)),
        ),
    )
    if name is None:
        return
    wait_for_complete(sdk, calls, name)


def events_and_delete(sdk: TrainerClient, calls: Calls, parameters: dict[str, Any]) -> None:
    name = parameters["name"]
    calls(
        "get_job_events",
        lambda: sdk.get_job_events(name),
        lambda events: [
            [e.involved_object_kind, e.involved_object_name, e.reason, e.message] for e in events
        ],
    )
    calls("list_jobs", sdk.list_jobs, names)
    calls("delete_job", lambda: sdk.delete_job(name), lambda _: None)
    calls(
        "list_jobs(after delete)",
        lambda: _until(lambda: name not in names(sdk.list_jobs())),
        lambda _: None,
    )
    calls("get_job(after delete)", lambda: sdk.get_job(name), job)


def _until(done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("not within the wait")
        time.sleep(0.5)
    return True


SCENARIOS = {
    "runtimes": runtimes,
    "custom_trainer": custom_trainer,
    "container_trainer": container_trainer,
    "failing_trainer": failing_trainer,
    "builtin_torchtune": builtin_torchtune,
    "events_and_delete": events_and_delete,
}


class Warnings(logging.Handler):
    """What the SDK logs at WARNING and above (e.g. `verify_backend`'s missing public ConfigMap)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def main(kubeconfig: str, namespace: str, scenario: str) -> dict[str, Any]:
    parameters = json.load(sys.stdin)
    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    calls = Calls()
    sdk = calls(
        "TrainerClient",
        lambda: TrainerClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig)),
        lambda _: None,
    )
    if sdk is not None:
        SCENARIOS[scenario](sdk, calls, parameters)
    calls("logged warnings", lambda: warnings.messages)
    return {"calls": calls.recorded}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
