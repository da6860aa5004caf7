"""The full example pipeline, submitted through the API, runs on kubesim's Argo simulation.

task → parallel (2 branches) → map (3 regions) → dag → success, with prepare's on_failure path notify → fail.
The simulator runs no commands: what a container does is scripted per template (exit codes, durations), and
the `fail` terminal, whose real container runs `exit 1`, is scripted to do just that.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from kube.client import reset_client
from kubesim.simulator import Simulator
from pipelines.tests.conftest import NAMESPACE, use_cluster
from workflows.tests.pipeline_examples import (
    FULL_CONFIG_YAML,
    FULL_PIPELINE_YAML,
    MAGNUS_CONFIG_YAML,
    MAGNUS_PIPELINE_YAML,
    full_pipeline,
    lint_errors,
)

pytestmark = pytest.mark.django_db

WORKFLOWS = "workflows.argoproj.io"
FINISHED = ("Succeeded", "Failed", "Error")
MAIN_LINE = ("train", "score", "evaluate", "success")


@pytest.fixture
def argo(kubesim_factory: Callable[..., Simulator], settings: Any) -> Iterator[Simulator]:
    """A simulator with the kubelet and Argo on a frozen clock, as the configured cluster."""
    simulator = kubesim_factory(frozen_clock=True, argo=True)
    use_cluster(simulator, settings)
    # The steps read DB_PASSWORD from this Secret; a real kubelet would not start them without it.
    simulator.store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "churn-db"},
            "stringData": {"password": "pw"},
        },
        NAMESPACE,
    )
    simulator.argo.script("fail", run={"exitCode": 1})
    yield simulator
    reset_client()


def run(
    api: APIClient, editor: Any, argo: Simulator, pipeline: str = FULL_PIPELINE_YAML, **extra: Any
) -> dict[str, Any]:
    """Submit through the API as an editor, let simulated time pass until the Workflow ends, return it."""
    api.force_authenticate(editor)
    body = {
        "pipeline": pipeline,
        "config": FULL_CONFIG_YAML,
        "variables": {"tag": "1.0"},
        "namespace": NAMESPACE,
        **extra,
    }
    response = api.post("/api/pipelines/submit", body, format="json")
    assert response.status_code == 201, response.json()
    name = response.json()["name"]

    def read() -> dict[str, Any]:
        return argo.store.get(WORKFLOWS, name, NAMESPACE)

    assert argo.run_until(lambda: read().get("status", {}).get("phase") in FINISHED, within=3600)
    return read()


def pods_by_template(workflow: dict[str, Any]) -> dict[str, list[str]]:
    """template → the phases of its pods (one per run: retries and map items add more)."""
    found: dict[str, list[str]] = defaultdict(list)
    for node in workflow["status"]["nodes"].values():
        if node["type"] == "Pod":
            found[node["templateName"]].append(node["phase"])
    return dict(found)


def top_level(workflow: dict[str, Any]) -> dict[str, str]:
    """The entrypoint DAG's tasks (one per top-level step) and their phases."""
    name = workflow["metadata"]["name"]
    return {
        node["displayName"]: node["phase"]
        for node in workflow["status"]["nodes"].values()
        if node["name"].count(".") == 1 and node["name"].startswith(f"{name}.") and "(" not in node["name"]
    }


def test_the_full_pipeline_lints_clean_and_runs_to_completion(
    api: APIClient, editor: Any, argo: Simulator
) -> None:
    workflow = run(api, editor, argo)
    assert lint_errors({key: workflow[key] for key in ("apiVersion", "kind", "metadata", "spec")}) == []
    assert workflow["status"]["phase"] == "Succeeded"
    assert pods_by_template(workflow) == {
        "prepare": ["Succeeded"],
        "train-xgboost-fit": ["Succeeded"],
        "train-linear-fit": ["Succeeded"],
        "score-predict": ["Succeeded"] * 3,
        "evaluate-metrics": ["Succeeded"],
        "evaluate-plots": ["Succeeded"],
        "evaluate-report": ["Succeeded"],
        "success": ["Succeeded"],
    }
    assert top_level(workflow) == {
        "prepare": "Succeeded",
        **dict.fromkeys(MAIN_LINE, "Succeeded"),
        "notify": "Omitted",
        "fail": "Omitted",
    }


def test_the_map_runs_its_branch_once_per_region(api: APIClient, editor: Any, argo: Simulator) -> None:
    workflow = run(api, editor, argo)
    name = workflow["metadata"]["name"]
    predictions = sorted(
        node["name"].removeprefix(f"{name}.score.")
        for node in workflow["status"]["nodes"].values()
        if node.get("templateName") == "score-predict"
    )
    assert predictions == ["each(0:eu).predict", "each(1:us).predict", "each(2:apac).predict"]


def test_a_failing_step_takes_the_on_failure_path(api: APIClient, editor: Any, argo: Simulator) -> None:
    argo.argo.script("prepare", run={"duration": 5, "exitCode": 1})
    workflow = run(api, editor, argo)
    assert workflow["status"]["phase"] == "Failed"
    assert pods_by_template(workflow) == {
        "prepare": ["Failed"] * 3,  # the first run and its two retries
        "notify": ["Succeeded"],
        "fail": ["Failed"],
    }
    assert top_level(workflow) == {
        "prepare": "Failed",
        "notify": "Succeeded",
        "fail": "Failed",
        **dict.fromkeys(MAIN_LINE, "Omitted"),
    }


def test_an_on_failure_path_that_leads_to_success_recovers_the_pipeline(
    api: APIClient, editor: Any, argo: Simulator
) -> None:
    pipeline = full_pipeline()
    pipeline["dag"]["steps"]["notify"]["next"] = "success"
    del pipeline["dag"]["steps"]["fail"]
    argo.argo.script("prepare", run={"exitCode": 1})
    workflow = run(api, editor, argo, yaml.safe_dump(pipeline))
    assert workflow["status"]["phase"] == "Succeeded"
    assert top_level(workflow) == {
        "prepare": "Failed",
        "notify": "Succeeded",
        "train": "Omitted",
        "score": "Omitted",
        "evaluate": "Omitted",
        "success": "Succeeded",
    }


def test_a_failing_branch_of_a_parallel_step_fails_the_pipeline_after_the_other_branch_ends(
    api: APIClient, editor: Any, argo: Simulator
) -> None:
    argo.argo.script("train-linear-fit", run={"exitCode": 2})
    workflow = run(api, editor, argo)
    assert workflow["status"]["phase"] == "Failed"
    pods = pods_by_template(workflow)
    assert (pods["train-linear-fit"], pods["train-xgboost-fit"]) == (["Failed"], ["Succeeded"])
    assert "score-predict" not in pods
    assert top_level(workflow)["train"] == "Failed"


def test_a_magnus_pipeline_maps_over_a_parameter_it_never_declared(
    api: APIClient, editor: Any, argo: Simulator
) -> None:
    workflow = run(
        api,
        editor,
        argo,
        MAGNUS_PIPELINE_YAML,
        config=MAGNUS_CONFIG_YAML,
        variables={"docker_image": "churn:1"},
        parameters={"lr": 0.01, "seeds": [1, 2, 3]},
    )
    assert workflow["status"]["phase"] == "Succeeded"
    name = workflow["metadata"]["name"]
    fits = sorted(
        node["name"].removeprefix(f"{name}.fit.")
        for node in workflow["status"]["nodes"].values()
        if node.get("templateName") == "fit-train"
    )
    assert fits == ["each(0:1).train", "each(1:2).train", "each(2:3).train"]
    assert pods_by_template(workflow) == {"prepare": ["Succeeded"], "fit-train": ["Succeeded"] * 3}
