"""Every transpiled workflow passes our Argo linter (workflows.lint), whatever features the pipeline uses.

The step and configuration tests lint each workflow they render too; this catalogue keeps the combinations
that matter most in one place.
"""

from typing import Any

import pytest

from workflows.pipeline import transpile
from workflows.tests.pipeline_examples import IMAGE, chain, full_config, full_pipeline, lint_errors


def branch(command: str, **task: Any) -> dict[str, Any]:
    return {
        "start_at": "work",
        "steps": {
            "work": {"type": "task", "command": command, "next": "done", **task},
            "done": {"type": "success"},
        },
    }


def guarded_branch(command: str) -> dict[str, Any]:
    """A branch whose step has its own on_failure path, so the branch renders both terminals."""
    return {
        "start_at": "work",
        "steps": {
            "work": {"type": "task", "command": command, "next": "done", "on_failure": "cleanup"},
            "cleanup": {"type": "task", "command": "cleanup", "next": "stop"},
            "done": {"type": "success"},
            "stop": {"type": "fail"},
        },
    }


NESTED_MAPS = chain(
    (
        "regions",
        {
            "type": "map",
            "iterate_on": "regions",
            "iterate_as": "region",
            "branch": {
                "start_at": "models",
                "steps": {
                    "models": {
                        "type": "map",
                        "items": [{"name": "a", "depth": 3}, {"name": "b", "depth": 5}],
                        "iterate_as": "model",
                        "parallelism": 1,
                        "branch": guarded_branch("fit {{item.region}} {{item.model}} {{parameters.lr}}"),
                        "next": "done",
                    },
                    "done": {"type": "success"},
                },
            },
            "next": "success",
        },
    ),
    parameters={"regions": ["eu", "us"], "lr": 0.1},
)

PARALLEL_INSIDE_MAP_INSIDE_DAG = chain(
    (
        "evaluate",
        {
            "type": "dag",
            "tasks": {
                "split": {"command": "split"},
                "per_fold": {
                    "type": "map",
                    "items": [1, 2, 3],
                    "iterate_as": "fold",
                    "branch": {
                        "start_at": "both",
                        "steps": {
                            "both": {
                                "type": "parallel",
                                "branches": {
                                    "a": branch("a {{item.fold}}"),
                                    "b": guarded_branch("b {{item.fold}}"),
                                },
                                "next": "done",
                            },
                            "done": {"type": "success"},
                        },
                    },
                    "depends": ["split"],
                },
                "summary": {"command": "summary", "depends": ["per_fold"], "retry": 2},
            },
            "next": "success",
            "on_failure": "fail",
        },
    ),
)

EVERY_SETTING = chain(
    (
        "train",
        {
            "type": "task",
            "command": ["python", "-c", "print('{{parameters.lr}}')"],
            "retry": {"limit": 4, "policy": "OnTransientError", "backoff": {"duration": "5", "factor": 3}},
            "mode_config": {
                "argo": {
                    "cpu_limit": 1.5,
                    "cpu_request": "100m",
                    "memory_request": "512Mi",
                    "image_pull_policy": "Never",
                    "secrets_from_k8s": ["A=one:key", "B=two:key.json"],
                }
            },
            "next": "success",
            "on_failure": "fail",
        },
    ),
    parameters={"lr": "0.1"},
)

LONG_NAMES = chain(
    (
        "a" * 60,
        {"type": "parallel", "branches": {"b" * 60: branch("x"), "c" * 60: branch("y")}, "next": "success"},
    ),
)


@pytest.mark.parametrize(
    ("pipeline", "config"),
    [
        pytest.param(full_pipeline(), full_config(), id="full example"),
        pytest.param(full_pipeline(), {**full_config(), "enable_caching": True}, id="full example, cached"),
        pytest.param(NESTED_MAPS, {"docker_image": IMAGE, "enable_caching": True}, id="nested maps"),
        pytest.param(PARALLEL_INSIDE_MAP_INSIDE_DAG, {"docker_image": IMAGE}, id="parallel in map in dag"),
        pytest.param(EVERY_SETTING, {"docker_image": IMAGE, "enable_caching": True}, id="every setting"),
        pytest.param(LONG_NAMES, {"docker_image": IMAGE}, id="long names"),
    ],
)
def test_transpiled_workflows_lint_clean(pipeline: dict[str, Any], config: dict[str, Any]) -> None:
    workflow = transpile(pipeline, config, environ={"ARGOML_VAR_tag": "1"}).workflow
    assert lint_errors(workflow) == []


def test_the_linter_would_notice_a_broken_workflow() -> None:
    """The assertion above can fail: a dangling template reference is reported."""
    workflow = transpile(full_pipeline(), full_config(), environ={"ARGOML_VAR_tag": "1"}).workflow
    workflow["spec"]["templates"] = [t for t in workflow["spec"]["templates"] if t["name"] != "score-branch"]
    assert lint_errors(workflow) != []
