"""Katib's validator_test.go fixtures (newFakeInstance, newFakeBatchJob, newFakeTrialParamters) as the
dicts a webhook receives, so each ported case reads like Katib's.

One change, on purpose: Katib's fake Experiment names its algorithm and early stopping rule "test" and
mocks katib-config to accept any name; ours names `random` and `medianstop`, the names we serve.
"""

from __future__ import annotations

import copy
from typing import Any

from katib import constants as k

COMMAND = [
    "python3",
    "--epochs=1",
    "--batch-size=16",
    "/opt/pytorch-mnist/mnist.py",
    "--lr=${trialParameters.learningRate}",
    "--momentum=${trialParameters.momentum}",
]


def batch_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "training-container",
                            "image": "ghcr.io/kubeflow/katib/pytorch-mnist-cpu",
                            "command": list(COMMAND),
                        }
                    ]
                }
            }
        },
    }


def trial_parameters() -> list[dict[str, str]]:
    return [
        {"name": "learningRate", "description": "Learning rate", "reference": "lr"},
        {"name": "momentum", "description": "Momentum for the training model", "reference": "momentum"},
    ]


def experiment(**spec_changes: Any) -> dict[str, Any]:
    """newFakeInstance: a valid Experiment; `spec_changes` replace spec fields (None removes one)."""
    spec: dict[str, Any] = {
        "maxTrialCount": 6,
        "metricsCollectorSpec": {"collector": {"kind": k.STDOUT_COLLECTOR}},
        "objective": {"type": "maximize", "goal": 0.11, "objectiveMetricName": "testme"},
        "algorithm": {
            "algorithmName": "random",
            "algorithmSettings": [{"name": "random_state", "value": "1"}],
        },
        "earlyStopping": {
            "algorithmName": "medianstop",
            "algorithmSettings": [{"name": "min_trials_required", "value": "1"}],
        },
        "parameters": [
            {
                "name": "lr",
                "parameterType": "int",
                "feasibleSpace": {"max": "5", "min": "1", "distribution": "uniform"},
            },
            {
                "name": "momentum",
                "parameterType": "categorical",
                "feasibleSpace": {"list": ["0.95", "0.85", "0.75"]},
            },
        ],
        "trialTemplate": {
            "primaryContainerName": "training-container",
            "successCondition": k.DEFAULT_JOB_SUCCESS_CONDITION,
            "failureCondition": k.DEFAULT_JOB_FAILURE_CONDITION,
            "trialSpec": batch_job(),
            "trialParameters": trial_parameters(),
        },
    }
    for key, value in spec_changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {"name": "fake", "namespace": "fakens"},
        "spec": spec,
    }


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `base` with the value at a dotted path (`spec.objective.type`, `...parameters.1.name`)
    replaced; None removes it."""
    copied = copy.deepcopy(base)
    *parents, last = path.split(".")
    target: Any = copied
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
    if isinstance(target, list):
        target[int(last)] = value
    elif value is None:
        target.pop(last, None)
    else:
        target[last] = value
    return copied


def kinds(errors: list[Any]) -> list[tuple[str, str]]:
    """Each error's path and apimachinery type, as Katib's tests compare them (ignoring detail and value)."""
    return [(error.path, error.message.split(":", 1)[0]) for error in errors]
