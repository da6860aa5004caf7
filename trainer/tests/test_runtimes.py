"""The ready-made ClusterTrainingRuntimes parse, resolve and plan as Kubeflow Trainer's own would run."""

from __future__ import annotations

import pytest

from trainer import constants as c
from trainer.operator import plan, resolution, spec
from trainer.runtimes import catalog
from trainer.tests import factories as f

SHIPPED = {rt["metadata"]["name"]: rt for rt in catalog.ready_made_runtimes()}


def planned(runtime_name: str, trainer: dict | None = None) -> plan.Plan:
    runtime = spec.parse_runtime(SHIPPED[runtime_name])
    job = spec.parse_train_job(f.train_job(name="tj", runtime_name=runtime_name, trainer=trainer))
    return plan.plan(resolution.resolve(job, runtime))


def env_of(pod):
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}


def test_the_four_upstream_runtimes_ship_with_their_framework_label():
    assert {name: rt["metadata"]["labels"][c.LABEL_FRAMEWORK] for name, rt in SHIPPED.items()} == {
        "torch-distributed": "torch",
        "deepspeed-distributed": "deepspeed",
        "jax-distributed": "jax",
        "xgboost-distributed": "xgboost",
    }


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_runtime_is_a_cluster_runtime_that_parses(name):
    runtime = spec.parse_runtime(SHIPPED[name])
    assert runtime.kind == c.CLUSTER_TRAINING_RUNTIME
    assert runtime.name == name
    assert runtime.trainer_job() is not None


def test_torch_distributed():
    result = planned(
        "torch-distributed", {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}
    )
    assert [pod["metadata"]["name"] for pod in result.pods] == ["tj-node-0-0", "tj-node-0-1"]
    container = result.pods[1]["spec"]["containers"][0]
    assert container["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
    assert env_of(result.pods[1]) == {
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "auto",
        "PET_NODE_RANK": None,
        "PET_MASTER_ADDR": "tj-node-0-0.tj",
        "PET_MASTER_PORT": "29500",
    }


def test_deepspeed_distributed_runs_its_launcher_as_a_node_after_the_nodes_are_ready():
    result = planned(
        "deepspeed-distributed", {"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}
    )
    assert [step.name for step in result.steps] == ["node", "launcher"]
    assert result.steps[1].depends_on == (spec.Dependency("node", "Ready"),)
    assert [pod["metadata"]["name"] for pod in result.pods] == [
        "tj-node-0-0",
        "tj-node-0-1",
        "tj-launcher-0-0",
    ]
    assert result.config_maps[0]["data"]["hostfile"] == (
        "tj-node-0-0.tj slots=2\ntj-node-0-1.tj slots=2\ntj-launcher-0-0.tj slots=2\n"
    )
    node, launcher = result.pod("tj-node-0-0"), result.pod("tj-launcher-0-0")
    assert node["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"]
    assert node["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]
    assert env_of(launcher)["OMPI_MCA_orte_set_default_slots"] == "2"
    # Nodes train too (runLauncherAsNode): they get the GPUs as well as the launcher.
    assert node["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert launcher["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert result.service["spec"]["publishNotReadyAddresses"] is True


def test_jax_distributed():
    result = planned("jax-distributed", {"numNodes": 2})
    assert result.pods[0]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/jax:25.10-py3"
    assert env_of(result.pods[1]) == {
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": None,
        "JAX_COORDINATOR_ADDRESS": "tj-node-0-0.tj:29500",
    }


def test_xgboost_distributed():
    result = planned("xgboost-distributed", {"numNodes": 4})
    assert result.pods[0]["spec"]["containers"][0]["image"] == "ghcr.io/kubeflow/trainer/xgboost-runtime"
    assert env_of(result.pods[3])["DMLC_NUM_WORKER"] == "4"
