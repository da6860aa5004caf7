"""Helpers of the tests that run TrainJobs on the simulator: Trainer's CRDs and runtimes, TrainJobs whose pods
follow a script on the simulated kubelet, and short readers of what the cluster holds."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from argoml_site.crds import TRAINER_RESOURCES
from jobs.tests.cluster import POD_GROUP_CRDS
from kubesim.errors import ApiError
from kubesim.kubelet import SCRIPT_ANNOTATION
from kubesim.simulator import Simulator
from trainer import constants as c
from trainer.runtimes import catalog
from trainer.tests import factories as f

TRAINJOBS = "trainjobs.trainer.kubeflow.org"
CLUSTER_RUNTIMES = "clustertrainingruntimes.trainer.kubeflow.org"


def _create(sim: Simulator, manifest: dict[str, Any]) -> None:
    try:
        sim.store.create(manifest)
    except ApiError as error:
        if error.code != 409:
            raise


def install_trainer(sim: Simulator) -> None:
    """Trainer's three CRDs (`install_crds --trainer`), the ready-made runtimes, and the test runtimes
    (`torchtune-test` shaped as Trainer's torchtune runtimes, with a shared claim)."""
    for resource in TRAINER_RESOURCES:
        _create(sim, resource.manifest())
    for runtime in catalog.ready_made_runtimes():
        _create(sim, runtime)
    _create(sim, initializer_runtime())
    _create(sim, never_restart_runtime())
    _create(sim, f.torchtune_runtime())


def initializer_runtime() -> dict[str, Any]:
    """Both initializers, then a torch trainer that depends on their completion (Trainer's torchtune and
    initializer runtimes have this shape)."""
    return f.runtime(
        f.replicated_job(
            "dataset-initializer", f.container("dataset-initializer"), ancestor=c.DATASET_INITIALIZER
        ),
        f.replicated_job("model-initializer", f.container("model-initializer"), ancestor=c.MODEL_INITIALIZER),
        f.replicated_job(
            "node",
            f.container(),
            ancestor=c.ANCESTOR_TRAINER,
            depends_on=[(c.DATASET_INITIALIZER, "Complete"), (c.MODEL_INITIALIZER, "Complete")],
        ),
        ml_policy={"numNodes": 1, "torch": {}},
        name="torch-with-initializers",
    )


def never_restart_runtime() -> dict[str, Any]:
    """A torch runtime whose pods are not restarted in place, so a failing container fails its pod."""
    runtime = f.torch_runtime()
    runtime["metadata"]["name"] = "torch-never-restart"
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return runtime


def scripted(job: dict[str, Any], scripts: dict[str, Any]) -> dict[str, Any]:
    """The TrainJob with a runtime patch that gives each replicated job's pods a kubelet script (for its
    container named like the step's, `node` for trainer and launcher)."""
    job = copy.deepcopy(job)
    jobs = [
        {
            "name": step,
            "template": {
                "spec": {
                    "template": {"metadata": {"annotations": {SCRIPT_ANNOTATION: json.dumps({"*": script})}}}
                }
            },
        }
        for step, script in scripts.items()
    ]
    job["spec"]["runtimePatches"] = [
        {
            "manager": "test.argoml.io/kubelet-script",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}},
        }
    ]
    return job


def train_job(name: str, namespace: str, runtime: str, **spec: Any) -> dict[str, Any]:
    job = f.train_job(name, namespace, runtime, **spec)
    del job["metadata"]["uid"]
    return job


def get_train_job(sim: Simulator, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return sim.store.get(TRAINJOBS, name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


def conditions(job: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """type → (status, reason)."""
    found = ((job or {}).get("status") or {}).get("conditions") or []
    return {cond["type"]: (cond["status"], cond.get("reason", "")) for cond in found}


def jobs_status(job: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    found = ((job or {}).get("status") or {}).get("jobsStatus") or []
    return {entry["name"]: {k: v for k, v in entry.items() if k != "name"} for entry in found}


def install_pod_group_crd(sim: Simulator, scheduler: str) -> None:
    """One gang scheduler's PodGroup CRD (`volcano` or `scheduler-plugins`), vendored in jobs/tests/crds."""
    path = next(path for path in POD_GROUP_CRDS if path.name.startswith(scheduler))
    _create(sim, yaml.safe_load(path.read_text()))
