"""How each step type is rendered, and how on_failure paths run under Argo's DAG rules."""

from typing import Any

from workflows.pipeline import transpile
from workflows.tests.argo_dag_model import run_workflow
from workflows.tests.pipeline_examples import (
    IMAGE,
    chain,
    container,
    dag_tasks,
    lint_errors,
    one_task_pipeline,
    template,
    templates,
)

CONFIG = {"docker_image": IMAGE}


def render(pipeline: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """The transpiled workflow, which must also pass our linter."""
    workflow = transpile(pipeline, CONFIG, **kwargs).workflow
    assert lint_errors(workflow) == []
    return workflow


def task(command: str = "run", **fields: Any) -> dict[str, Any]:
    return {"type": "task", "command": command, **fields}


def branch(*steps: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    graph = dict(steps)
    graph["done"] = {"type": "success"}
    return {"start_at": steps[0][0], "steps": graph}


def test_the_workflow_is_an_argo_workflow_named_after_the_pipeline() -> None:
    pipeline = {**one_task_pipeline(), "name": "churn", "description": "Churn model."}
    workflow = render(pipeline)
    assert workflow["apiVersion"] == "argoproj.io/v1alpha1"
    assert workflow["kind"] == "Workflow"
    assert workflow["metadata"] == {
        "generateName": "churn-",
        "labels": {"argoml.io/pipeline": "churn"},
        "annotations": {"workflows.argoproj.io/description": "Churn model."},
    }
    assert workflow["spec"]["entrypoint"] == "main"
    assert "arguments" not in workflow["spec"]


def test_a_task_is_a_container_template_running_its_command_split_like_a_shell() -> None:
    workflow = render(one_task_pipeline(command="python train.py --name 'big model'"))
    assert set(templates(workflow)) == {"main", "train"}
    assert dag_tasks(workflow, "main") == {"train": {"name": "train", "template": "train"}}
    assert container(workflow, "train")["command"] == ["python", "train.py", "--name", "big model"]


def test_a_command_may_be_given_as_a_list() -> None:
    workflow = render(one_task_pipeline(command=["python", "-c", "print('a b')"]))
    assert container(workflow, "train")["command"] == ["python", "-c", "print('a b')"]


def test_parameters_become_workflow_arguments_read_by_commands() -> None:
    pipeline = one_task_pipeline(command="train --lr {{parameters.lr}} --tags {{ parameters.tags }}")
    pipeline["parameters"] = {"lr": 0.1, "tags": ["a", "b"], "dry_run": False, "owner": "ml"}
    result = transpile(pipeline, CONFIG)
    assert result.workflow["spec"]["arguments"] == {
        "parameters": [
            {"name": "lr", "value": "0.1"},
            {"name": "tags", "value": '["a", "b"]'},
            {"name": "dry_run", "value": "false"},
            {"name": "owner", "value": "ml"},
        ]
    }
    assert container(result.workflow, "train")["command"] == [
        "train",
        "--lr",
        "{{workflow.parameters.lr}}",
        "--tags",
        "{{workflow.parameters.tags}}",
    ]
    assert result.warnings == (
        "parameter 'dry_run' is not used by any step",
        "parameter 'owner' is not used by any step",
    )


def test_parameters_set_at_transpile_time_replace_the_defaults() -> None:
    pipeline = one_task_pipeline(command="train --lr {{parameters.lr}}")
    pipeline["parameters"] = {"lr": 0.1}
    workflow = render(pipeline, parameters={"lr": "0.5"})
    assert workflow["spec"]["arguments"]["parameters"] == [{"name": "lr", "value": "0.5"}]


def test_retries_are_a_retry_strategy_on_the_template_not_in_the_container() -> None:
    retry = {
        "limit": 3,
        "policy": "Always",
        "backoff": {"duration": "10s", "factor": 2, "max_duration": "5m"},
    }
    workflow = render(one_task_pipeline(retry=retry))
    assert template(workflow, "train")["retryStrategy"] == {
        "limit": "3",
        "retryPolicy": "Always",
        "backoff": {"duration": "10s", "factor": "2", "maxDuration": "5m"},
    }
    assert container(workflow, "train")["command"] == ["python", "train.py"]


def test_a_bare_number_of_retries_retries_on_failure() -> None:
    workflow = render(one_task_pipeline(retry=2))
    assert template(workflow, "train")["retryStrategy"] == {"limit": "2", "retryPolicy": "OnFailure"}


def test_next_makes_the_following_step_depend_on_success_and_the_success_terminal_is_left_out() -> None:
    workflow = render(chain(("a", task(next="b")), ("b", task(next="success"))))
    assert dag_tasks(workflow, "main") == {
        "a": {"name": "a", "template": "a"},
        "b": {"name": "b", "template": "b", "depends": "a.Succeeded"},
    }
    assert "success" not in templates(workflow)


def test_step_names_with_underscores_become_dashed_argo_names() -> None:
    workflow = render(
        chain(("prepare_data", task(next="train_model")), ("train_model", task(next="success")))
    )
    assert dag_tasks(workflow, "main")["train-model"] == {
        "name": "train-model",
        "template": "train-model",
        "depends": "prepare-data.Succeeded",
    }


def test_a_parallel_step_runs_every_branch_and_the_next_step_waits_for_all_of_them() -> None:
    pipeline = chain(
        (
            "train",
            {
                "type": "parallel",
                "branches": {
                    "xgboost": branch(("fit", task("fit xgboost", next="done"))),
                    "linear": branch(
                        ("fit", task("fit linear", next="tune")), ("tune", task("tune", next="done"))
                    ),
                },
                "next": "report",
            },
        ),
        ("report", task("report", next="success")),
    )
    workflow = render(pipeline)
    assert dag_tasks(workflow, "main")["report"]["depends"] == "train.Succeeded"
    assert template(workflow, "train")["dag"] == {
        "failFast": False,
        "tasks": [
            {"name": "xgboost", "template": "train-xgboost"},
            {"name": "linear", "template": "train-linear"},
        ],
    }
    assert dag_tasks(workflow, "train-linear") == {
        "fit": {"name": "fit", "template": "train-linear-fit"},
        "tune": {"name": "tune", "template": "train-linear-tune", "depends": "fit.Succeeded"},
    }
    assert container(workflow, "train-xgboost-fit")["command"] == ["fit", "xgboost"]
    run = run_workflow(workflow)
    assert run.phase == "Succeeded"
    assert run.containers[-1] == "report"


def test_a_map_over_a_list_parameter_loops_with_param_and_bounded_parallelism() -> None:
    pipeline = chain(
        (
            "score",
            {
                "type": "map",
                "iterate_on": "regions",
                "iterate_as": "region",
                "parallelism": 2,
                "branch": branch(("predict", task("predict --region {{item.region}}", next="done"))),
                "next": "success",
            },
        ),
        parameters={"regions": ["eu", "us", "apac"]},
    )
    workflow = render(pipeline)
    assert template(workflow, "score") == {
        "name": "score",
        "parallelism": 2,
        "dag": {
            "failFast": False,
            "tasks": [
                {
                    "name": "each",
                    "template": "score-branch",
                    "arguments": {"parameters": [{"name": "region", "value": "{{item}}"}]},
                    "withParam": "{{workflow.parameters.regions}}",
                }
            ],
        },
    }
    assert template(workflow, "score-branch")["inputs"] == {"parameters": [{"name": "region"}]}
    assert dag_tasks(workflow, "score-branch")["predict"]["arguments"] == {
        "parameters": [{"name": "region", "value": "{{inputs.parameters.region}}"}]
    }
    assert template(workflow, "score-predict")["inputs"] == {"parameters": [{"name": "region"}]}
    assert container(workflow, "score-predict")["command"] == [
        "predict",
        "--region",
        "{{inputs.parameters.region}}",
    ]
    assert run_workflow(workflow).containers == ["score-predict"] * 3


def test_a_map_over_literal_items_uses_with_items_and_no_parallelism_limit() -> None:
    pipeline = chain(
        (
            "fold",
            {
                "type": "map",
                "items": [1, 2],
                "branch": branch(("fit", task("fit {{item.item}}", next="done"))),
                "next": "success",
            },
        )
    )
    workflow = render(pipeline)
    each = dag_tasks(workflow, "fold")["each"]
    assert each["withItems"] == [1, 2]
    assert "withParam" not in each
    assert "parallelism" not in template(workflow, "fold")


def test_nested_maps_pass_every_enclosing_item_down() -> None:
    inner = {
        "type": "map",
        "items": ["a", "b"],
        "iterate_as": "model",
        "branch": branch(("fit", task("fit {{item.region}} {{item.model}}", next="done"))),
        "next": "done",
    }
    outer = {
        "type": "map",
        "items": ["eu", "us"],
        "iterate_as": "region",
        "branch": branch(("models", inner)),
        "next": "success",
    }
    workflow = render(chain(("regions", outer)))
    assert template(workflow, "regions-models")["inputs"] == {"parameters": [{"name": "region"}]}
    assert dag_tasks(workflow, "regions-models")["each"]["arguments"] == {
        "parameters": [
            {"name": "region", "value": "{{inputs.parameters.region}}"},
            {"name": "model", "value": "{{item}}"},
        ]
    }
    assert template(workflow, "regions-models-fit")["inputs"] == {
        "parameters": [{"name": "region"}, {"name": "model"}]
    }
    assert container(workflow, "regions-models-fit")["command"] == [
        "fit",
        "{{inputs.parameters.region}}",
        "{{inputs.parameters.model}}",
    ]
    assert len(run_workflow(workflow).containers) == 4


def test_a_dag_step_keeps_its_explicit_dependencies() -> None:
    dag = {
        "type": "dag",
        "tasks": {
            "metrics": {"command": "metrics"},
            "plots": {"command": "plots", "retry": 1},
            "report": {"command": "report", "depends": ["metrics", "plots"]},
        },
        "next": "success",
    }
    workflow = render(chain(("evaluate", dag)))
    assert template(workflow, "evaluate")["dag"] == {
        "tasks": [
            {"name": "metrics", "template": "evaluate-metrics"},
            {"name": "plots", "template": "evaluate-plots"},
            {
                "name": "report",
                "template": "evaluate-report",
                "depends": "metrics.Succeeded && plots.Succeeded",
            },
        ]
    }
    assert template(workflow, "evaluate-plots")["retryStrategy"] == {"limit": "1", "retryPolicy": "OnFailure"}
    assert run_workflow(workflow, failing={"evaluate-plots"}).containers == [
        "evaluate-metrics",
        "evaluate-plots",
    ]


def test_a_fail_terminal_is_a_container_that_fails_the_workflow() -> None:
    workflow = render(chain(("check", task("check", next="fail"))))
    assert container(workflow, "fail")["command"] == [
        "sh",
        "-c",
        "echo 'pipeline reached fail step fail' >&2; exit 1",
    ]
    assert container(workflow, "fail")["image"] == IMAGE
    assert run_workflow(workflow).phase == "Failed"


def on_failure_pipeline(handler_next: str) -> dict[str, Any]:
    return chain(
        ("train", task("train", next="publish", on_failure="alert")),
        ("publish", task("publish", next="success")),
        ("alert", task("alert", next=handler_next)),
    )


def test_on_failure_makes_the_handler_depend_on_the_step_failing() -> None:
    workflow = render(on_failure_pipeline("fail"))
    assert dag_tasks(workflow, "main") == {
        "train": {"name": "train", "template": "train"},
        "publish": {"name": "publish", "template": "publish", "depends": "train.Succeeded"},
        "alert": {"name": "alert", "template": "alert", "depends": "train.Failed || train.Errored"},
        "success": {"name": "success", "template": "success", "depends": "publish.Succeeded"},
        "fail": {"name": "fail", "template": "fail", "depends": "alert.Succeeded"},
    }


def test_a_failing_step_takes_its_on_failure_path_and_ends_at_the_fail_terminal() -> None:
    workflow = render(on_failure_pipeline("fail"))
    run = run_workflow(workflow, failing={"train"})
    assert run.containers == ["train", "alert", "fail"]
    assert run.phase == "Failed"


def test_when_the_step_succeeds_the_handler_is_skipped_and_the_workflow_succeeds() -> None:
    run = run_workflow(render(on_failure_pipeline("fail")))
    assert run.containers == ["train", "publish", "success"]
    assert run.phase == "Succeeded"


def test_a_handler_that_leads_to_success_recovers_the_workflow() -> None:
    workflow = render(on_failure_pipeline("success"))
    assert dag_tasks(workflow, "main")["success"]["depends"] == "publish.Succeeded || alert.Succeeded"
    run = run_workflow(workflow, failing={"train"})
    assert run.containers == ["train", "alert", "success"]
    assert run.phase == "Succeeded"


def test_a_step_failing_without_a_handler_fails_the_workflow_and_stops_the_chain() -> None:
    workflow = render(chain(("a", task(next="b")), ("b", task(next="c")), ("c", task(next="success"))))
    run = run_workflow(workflow, failing={"b"})
    assert run.containers == ["a", "b"]
    assert run.phase == "Failed"


def test_on_failure_inside_a_branch_is_handled_inside_that_branch() -> None:
    guarded = {
        "start_at": "fit",
        "steps": {
            "fit": task("fit", next="done", on_failure="fallback"),
            "fallback": task("fallback", next="done"),
            "done": {"type": "success"},
        },
    }
    pipeline = chain(
        (
            "train",
            {
                "type": "parallel",
                "branches": {"a": guarded, "b": branch(("fit", task("fit b", next="done")))},
                "next": "report",
            },
        ),
        ("report", task("report", next="success")),
    )
    workflow = render(pipeline)
    assert dag_tasks(workflow, "train-a")["fallback"]["depends"] == "fit.Failed || fit.Errored"
    run = run_workflow(workflow, failing={"train-a-fit"})
    assert "train-a-fallback" in run.containers
    assert run.containers[-1] == "report"
    assert run.phase == "Succeeded"


def test_a_failed_parallel_step_can_itself_have_an_on_failure_path() -> None:
    pipeline = chain(
        (
            "train",
            {
                "type": "parallel",
                "branches": {"a": branch(("fit", task("fit", next="done")))},
                "next": "success",
                "on_failure": "alert",
            },
        ),
        ("alert", task("alert", next="fail")),
    )
    workflow = render(pipeline)
    assert dag_tasks(workflow, "main")["alert"]["depends"] == "train.Failed || train.Errored"
    run = run_workflow(workflow, failing={"train-a-fit"})
    assert run.containers == ["train-a-fit", "alert", "fail"]
    assert run.phase == "Failed"


def test_template_names_never_clash() -> None:
    pipeline = chain(
        ("main", task("first", next="score-predict")),
        ("score-predict", task("second", next="score")),
        (
            "score",
            {
                "type": "map",
                "items": [1],
                "branch": branch(("predict", task("third", next="done"))),
                "next": "success",
            },
        ),
    )
    workflow = render(pipeline)
    names = [t["name"] for t in workflow["spec"]["templates"]]
    assert len(names) == len(set(names))
    assert dag_tasks(workflow, "main")["main"]["template"] == "main-2"
    assert container(workflow, "score-predict-2")["command"] == ["third"]


def test_long_template_names_are_shortened_to_63_characters_deterministically() -> None:
    long_name = "a" * 40
    pipeline = chain(
        (
            long_name,
            {
                "type": "parallel",
                "branches": {"b" * 30: branch(("c" * 20, task(next="done")))},
                "next": "success",
            },
        )
    )
    names = [t["name"] for t in render(pipeline)["spec"]["templates"]]
    assert max(len(name) for name in names) == 63
    assert names == [t["name"] for t in render(pipeline)["spec"]["templates"]]
