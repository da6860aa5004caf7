"""Sweeps as users write them, for the hyperparam tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

TRAIN_TEMPLATE: dict[str, Any] = {
    "name": "train",
    "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}, {"name": "epochs", "default": "3"}]},
    "outputs": {"parameters": [{"name": "loss", "valueFrom": {"path": "/tmp/loss"}}]},
    "container": {
        "image": "python:3.11",
        "command": ["python", "train.py"],
        "args": ["--lr={{inputs.parameters.lr}}", "--batch-size={{inputs.parameters.batch-size}}"],
    },
}


def make_spec(**overrides: Any) -> dict[str, Any]:
    """A valid 3x4 grid sweep over `train`; keyword arguments replace top-level spec fields."""
    spec: dict[str, Any] = {
        "workflow": {
            "entrypoint": "train",
            "arguments": {"parameters": [{"name": "dataset", "value": "mnist"}]},
            "templates": [copy.deepcopy(TRAIN_TEMPLATE)],
        },
        "hyperparams": [
            {"name": "lr", "range": {"min": 0.1, "max": 0.3, "step": 0.1}},
            {"name": "batch-size", "values": [16, 32, 64, 128]},
        ],
        "objective": {"metric": "loss", "goal": "minimize"},
        "parallelism": 4,
    }
    spec.update(overrides)
    return spec


def make_hpw(
    spec: dict[str, Any] | None = None, name: str = "mnist-sweep", uid: str = "0b9f-uid"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "team-a"}
    if uid:
        metadata["uid"] = uid
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "HyperparamWorkflow",
        "metadata": metadata,
        "spec": spec if spec is not None else make_spec(),
    }


@pytest.fixture
def spec() -> dict[str, Any]:
    return make_spec()


@pytest.fixture
def hpw() -> dict[str, Any]:
    return make_hpw()
