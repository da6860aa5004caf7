"""The complete example: task → parallel (2 branches) → map → dag → success, with an on_failure path."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflows.pipeline import dump_workflow, transpile
from workflows.tests.argo_dag_model import run_workflow
from workflows.tests.pipeline_examples import (
    container,
    dag_tasks,
    full_config,
    full_pipeline,
    lint_errors,
    template,
    templates,
)

ENVIRON = {"ARGOML_VAR_tag": "2024.06.1"}
IMAGE = "registry.example.com/churn:2024.06.1"


@pytest.fixture
def workflow() -> dict[str, Any]:
    transpiled = transpile(full_pipeline(), full_config(), environ=ENVIRON).workflow
    assert lint_errors(transpiled) == []
    return transpiled


def test_every_step_has_its_template(workflow: dict[str, Any]) -> None:
    assert list(templates(workflow)) == [
        "main",
        "prepare",
        "train",
        "train-xgboost",
        "train-xgboost-fit",
        "train-linear",
        "train-linear-fit",
        "notify",
        "score",
        "score-branch",
        "score-predict",
        "fail",
        "evaluate",
        "evaluate-metrics",
        "evaluate-plots",
        "evaluate-report",
        "success",
    ]


def test_the_entrypoint_chains_the_steps_and_routes_a_failed_prepare_to_notify(
    workflow: dict[str, Any],
) -> None:
    assert workflow["spec"]["entrypoint"] == "main"
    assert {name: task.get("depends") for name, task in dag_tasks(workflow, "main").items()} == {
        "prepare": None,
        "train": "prepare.Succeeded",
        "notify": "prepare.Failed || prepare.Errored",
        "score": "train.Succeeded",
        "fail": "notify.Succeeded",
        "evaluate": "score.Succeeded",
        "success": "evaluate.Succeeded",
    }


def test_parameters_are_workflow_arguments(workflow: dict[str, Any]) -> None:
    assert workflow["spec"]["arguments"] == {
        "parameters": [
            {"name": "learning_rate", "value": "0.05"},
            {"name": "regions", "value": '["eu", "us", "apac"]'},
        ]
    }


def test_prepare_retries_with_backoff_and_gets_the_configured_container(workflow: dict[str, Any]) -> None:
    prepare = template(workflow, "prepare")
    assert prepare["retryStrategy"] == {
        "limit": "2",
        "retryPolicy": "OnFailure",
        "backoff": {"duration": "30s", "factor": "2", "maxDuration": "10m"},
    }
    assert prepare["container"] == {
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", "-m", "churn.prepare", "--out", "/data/prepared"],
        "resources": {"limits": {"cpu": "250m", "memory": "1G"}, "requests": {"cpu": "250m", "memory": "1G"}},
        "env": [
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "churn-db", "key": "password"}}}
        ],
    }


def test_the_parallel_step_joins_two_branches_and_one_branch_has_bigger_resources(
    workflow: dict[str, Any],
) -> None:
    assert template(workflow, "train")["dag"] == {
        "failFast": False,
        "tasks": [
            {"name": "xgboost", "template": "train-xgboost"},
            {"name": "linear", "template": "train-linear"},
        ],
    }
    xgboost = container(workflow, "train-xgboost-fit")
    assert xgboost["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi"},
        "requests": {"cpu": "2", "memory": "4Gi"},
    }
    assert xgboost["command"][-2:] == ["--lr", "{{workflow.parameters.learning_rate}}"]
    assert container(workflow, "train-linear-fit")["resources"]["limits"] == {"cpu": "250m", "memory": "1G"}


def test_the_map_runs_the_branch_per_region_two_at_a_time(workflow: dict[str, Any]) -> None:
    score = template(workflow, "score")
    assert score["parallelism"] == 2
    assert score["dag"]["tasks"] == [
        {
            "name": "each",
            "template": "score-branch",
            "arguments": {"parameters": [{"name": "region", "value": "{{item}}"}]},
            "withParam": "{{workflow.parameters.regions}}",
        }
    ]
    assert container(workflow, "score-predict")["command"][-1] == "{{inputs.parameters.region}}"


def test_the_dag_step_reports_after_metrics_and_plots(workflow: dict[str, Any]) -> None:
    assert dag_tasks(workflow, "evaluate")["report"]["depends"] == "metrics.Succeeded && plots.Succeeded"


def test_a_clean_run_goes_through_every_step_and_succeeds(workflow: dict[str, Any]) -> None:
    run = run_workflow(workflow)
    assert run.phase == "Succeeded"
    assert run.containers == [
        "prepare",
        "train-xgboost-fit",
        "train-linear-fit",
        *["score-predict"] * 3,
        "evaluate-metrics",
        "evaluate-plots",
        "evaluate-report",
        "success",
    ]


def test_a_failing_prepare_takes_the_on_failure_path_and_fails_the_workflow(workflow: dict[str, Any]) -> None:
    run = run_workflow(workflow, failing={"prepare"})
    assert run.containers == ["prepare", "notify", "fail"]
    assert run.phase == "Failed"


def test_a_failing_branch_stops_the_pipeline_after_the_join(workflow: dict[str, Any]) -> None:
    run = run_workflow(workflow, failing={"train-linear-fit"})
    assert run.containers == ["prepare", "train-xgboost-fit", "train-linear-fit"]
    assert run.phase == "Failed"


def test_run_time_regions_change_the_number_of_map_items() -> None:
    workflow = transpile(
        full_pipeline(), full_config(), environ=ENVIRON, parameters={"regions": '["eu"]'}
    ).workflow
    assert run_workflow(workflow).containers.count("score-predict") == 1


def test_the_yaml_output_reads_back_as_the_same_workflow(workflow: dict[str, Any]) -> None:
    text = dump_workflow(workflow)
    assert text.startswith("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\n")
    assert yaml.safe_load(text) == workflow


def test_the_example_in_the_docs_transpiles_to_what_the_docs_show() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "pipelines.md").read_text()
    pipeline_text, config_text, main_text = re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL)[:3]
    workflow = transpile(yaml.safe_load(pipeline_text), yaml.safe_load(config_text), environ=ENVIRON).workflow
    assert template(workflow, "main") == yaml.safe_load(main_text)[0]
    assert workflow == transpile(full_pipeline(), full_config(), environ=ENVIRON).workflow
