"""Pipeline definition errors: each names the step and the field, and all of them are reported together."""

from typing import Any

import pytest

from workflows.pipeline import PipelineError, load_document, parse_parameter_assignments, transpile
from workflows.tests.pipeline_examples import IMAGE, chain, full_pipeline, one_task_pipeline

CONFIG = {"docker_image": IMAGE}


def problems(pipeline: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(PipelineError) as caught:
        transpile(pipeline, CONFIG, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def task(command: str = "run", **fields: Any) -> dict[str, Any]:
    return {"type": "task", "command": command, **fields}


def test_an_unknown_next_names_the_step_and_lists_the_steps() -> None:
    pipeline = chain(("a", task(next="b")), ("b", task(next="sucess")), ("success", {"type": "success"}))
    assert problems(pipeline) == [
        "step b: next: 'sucess' is not a step here (steps: a, b, success)",
        "step success: is not reachable from start_at 'a'",
    ]


def test_an_unknown_on_failure_is_reported() -> None:
    pipeline = chain(("a", task(next="success", on_failure="alert")))
    assert problems(pipeline) == ["step a: on_failure: 'alert' is not a step here (steps: a, success)"]


def test_unreachable_steps_are_reported() -> None:
    pipeline = chain(("a", task(next="success")), ("orphan", task(next="success")))
    assert problems(pipeline) == ["step orphan: is not reachable from start_at 'a'"]


def test_a_cycle_through_next_is_reported_with_its_path() -> None:
    pipeline = chain(("a", task(next="b")), ("b", task(next="c", on_failure="fail")), ("c", task(next="b")))
    assert problems(pipeline) == ["step c: next: makes a cycle: b -> c -> b"]


def test_a_cycle_through_on_failure_is_reported() -> None:
    pipeline = chain(("a", task(next="b")), ("b", task(next="success", on_failure="a")))
    assert problems(pipeline) == ["step b: on_failure: makes a cycle: a -> b -> a"]


def test_every_step_that_runs_needs_a_next() -> None:
    assert problems(chain(("a", task()))) == [
        "step a: next: is required: the step to run afterwards (or a success/fail step)"
    ]


def test_terminals_take_no_next() -> None:
    pipeline = chain(("a", task(next="done")), ("done", {"type": "success", "next": "a"}))
    assert problems(pipeline) == [
        "step done: next: terminal steps end the pipeline; they take no next or on_failure"
    ]


def test_unknown_types_and_keys_are_refused_with_suggestions() -> None:
    pipeline = chain(("a", task(next="b", on_fail="c")), ("b", {"type": "job", "next": "success"}))
    assert problems(pipeline) == [
        "step a: on_fail: unknown key 'on_fail'; did you mean 'on_failure'?",
        "step b: type: 'job' must be one of task, parallel, map, dag, success, fail",
    ]


def test_start_at_must_be_a_step_that_runs() -> None:
    assert problems(
        {"dag": {"start_at": "nope", "steps": {"a": task(next="ok"), "ok": {"type": "success"}}}}
    ) == ["pipeline: dag.start_at: 'nope' is not one of the steps"]
    assert problems({"dag": {"start_at": "ok", "steps": {"ok": {"type": "success"}}}}) == [
        "pipeline: dag.start_at: 'ok' is a terminal; start at a step that runs"
    ]


def test_step_names_must_become_argo_names_without_clashing() -> None:
    pipeline = chain(("train_model", task(next="train-model")), ("train-model", task(next="success")))
    assert problems(pipeline) == [
        "step train-model: clashes with step 'train_model' as Argo task 'train-model'"
    ]
    assert problems(chain(("2fast", task(next="success")))) == [
        "step 2fast: the name must start with a letter and use letters, digits, '-' or '_' (max 63)"
    ]


def test_commands_may_only_reference_declared_parameters_and_enclosing_map_items() -> None:
    pipeline = chain(("a", task("train --lr {{parameters.lr}} --x {{item.region}} {{foo}}", next="success")))
    assert problems(pipeline) == ["step a: command: '{{parameters.lr}}' names no pipeline parameter"]
    pipeline = chain(("a", task("train {{item.region}}", next="success")))
    assert problems(pipeline) == ["step a: command: '{{item.region}}': no enclosing map"]
    pipeline = chain(("a", task("train {{workflow.name}}", next="success")))
    assert problems(pipeline) == [
        "step a: command: '{{workflow.name}}' is not a reference; use {{parameters.NAME}} or {{item.NAME}}"
    ]


def test_a_command_with_unbalanced_quotes_is_refused() -> None:
    assert problems(chain(("a", task("echo 'oops", next="success")))) == [
        "step a: command: cannot be split into arguments: No closing quotation"
    ]


def test_retries_are_checked() -> None:
    pipeline = chain(
        ("a", task(next="success", retry={"limit": -1, "policy": "Sometimes", "backoff": {"factor": 0}}))
    )
    assert problems(pipeline) == [
        "step a: retry.limit: -1 must be a whole number of retries, 0 or more",
        "step a: retry.policy: 'Sometimes' must be one of Always, OnFailure, OnError, OnTransientError",
        "step a: retry.backoff.factor: 0 must be a whole number, 1 or more",
        "step a: retry.backoff.duration: is required when backoff is set",
    ]


def branch(command: str = "run") -> dict[str, Any]:
    return {"start_at": "s", "steps": {"s": task(command, next="ok"), "ok": {"type": "success"}}}


def test_a_map_needs_exactly_one_list_to_iterate_on() -> None:
    neither = chain(("m", {"type": "map", "branch": branch(), "next": "success"}))
    assert problems(neither) == [
        "step m: iterate_on: set exactly one of iterate_on (a list parameter) or items (a list)"
    ]
    both = chain(
        ("m", {"type": "map", "iterate_on": "xs", "items": [1], "branch": branch(), "next": "success"})
    )
    both["parameters"] = {"xs": [1, 2]}
    assert problems(both) == [
        "step m: iterate_on: set exactly one of iterate_on (a list parameter) or items (a list)"
    ]


def test_a_map_iterates_on_a_declared_list_parameter() -> None:
    pipeline = chain(("m", {"type": "map", "iterate_on": "xs", "branch": branch(), "next": "success"}))
    assert problems(pipeline) == ["step m: iterate_on: 'xs' is not a pipeline parameter"]
    pipeline["parameters"] = {"xs": "not-a-list"}
    assert problems(pipeline) == ["step m: iterate_on: parameter 'xs' is not a list"]


def test_map_parallelism_and_items_are_checked() -> None:
    pipeline = chain(
        ("m", {"type": "map", "items": [], "parallelism": 0, "branch": branch(), "next": "success"})
    )
    assert problems(pipeline) == [
        "step m: items: must be a non-empty list",
        "step m: parallelism: 0 must be a whole number, 1 or more",
    ]


def test_a_nested_map_may_not_reuse_the_item_name_of_its_enclosing_map() -> None:
    inner = {"type": "map", "items": [1], "iterate_as": "x", "branch": branch(), "next": "ok"}
    outer_branch = {"start_at": "inner", "steps": {"inner": inner, "ok": {"type": "success"}}}
    pipeline = chain(
        ("outer", {"type": "map", "items": [1], "iterate_as": "x", "branch": outer_branch, "next": "success"})
    )
    assert problems(pipeline) == ["step outer.inner: iterate_as: 'x' is already the item of an enclosing map"]


def test_problems_inside_branches_name_the_full_step_path() -> None:
    broken = {"start_at": "s", "steps": {"s": task(next="nowhere")}}
    pipeline = chain(("fan", {"type": "parallel", "branches": {"a": broken}, "next": "success"}))
    assert problems(pipeline) == ["step fan.a.s: next: 'nowhere' is not a step here (steps: s)"]


def test_dag_tasks_use_depends_on_tasks_of_the_same_dag_without_cycles() -> None:
    dag = {
        "type": "dag",
        "tasks": {
            "a": {"command": "a", "depends": ["c"]},
            "b": {"command": "b", "depends": ["a", "ghost"]},
            "c": {"command": "c", "depends": ["b"], "next": "a"},
        },
        "next": "success",
    }
    assert problems(chain(("d", dag))) == [
        "step d.c: next: steps inside a dag use depends, not next or on_failure",
        "step d.b: depends: 'ghost' is not a step here (steps: a, b, c)",
        "step d.b: depends: makes a cycle: a -> c -> b -> a",
    ]


def test_a_parallel_step_needs_branches() -> None:
    assert problems(chain(("p", {"type": "parallel", "branches": {}, "next": "success"}))) == [
        "step p: branches: must be a non-empty mapping of branch name: {start_at, steps}"
    ]


def test_every_problem_is_reported_at_once_including_the_configuration() -> None:
    pipeline = full_pipeline()
    pipeline["dag"]["steps"]["prepare"]["next"] = "trian"
    pipeline["dag"]["steps"]["notify"]["mode_config"] = {"argo": {"cpu_limit": "lots"}}
    with pytest.raises(PipelineError) as caught:
        transpile(pipeline, {"docker_image": IMAGE, "image_pull_policy": "Sometimes"})
    assert [str(problem) for problem in caught.value.problems] == [
        "step notify: mode_config.argo.cpu_limit: "
        "'lots' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)",
        "step prepare: next: "
        "'trian' is not a step here (steps: evaluate, fail, notify, prepare, score, success, train)",
        "step train: is not reachable from start_at 'prepare'",
        "step score: is not reachable from start_at 'prepare'",
        "step evaluate: is not reachable from start_at 'prepare'",
        "step success: is not reachable from start_at 'prepare'",
        "config: image_pull_policy: 'Sometimes' must be one of IfNotPresent, Always, Never",
    ]


def test_run_time_parameters_need_valid_names_and_lists_must_stay_lists() -> None:
    pipeline = full_pipeline()
    assert problems(pipeline, parameters={"learning rate": "0.1", "regions": "eu"}) == [
        "--parameter learning rate: is not a valid name (letters, digits, '-' and '_')",
        '--parameter regions: must be a JSON list like ["a", "b"] because map step score iterates on it',
    ]


def test_a_parameter_without_a_value_must_be_given_one() -> None:
    pipeline = one_task_pipeline(command="train --lr {{parameters.lr}}")
    pipeline["parameters"] = {"lr": None}
    assert problems(pipeline) == ["pipeline: parameters.lr: has no value; set one with --parameter lr=VALUE"]
    assert transpile(pipeline, CONFIG, parameters={"lr": "0.3"}).workflow["spec"]["arguments"] == {
        "parameters": [{"name": "lr", "value": "0.3"}]
    }


def test_the_document_itself_must_have_a_dag() -> None:
    assert problems({"steps": {}}) == [
        "pipeline: steps: unknown key 'steps'; known keys: dag, description, name, parameters",
        "pipeline: dag: is required: a mapping with start_at and steps",
    ]
    assert problems(None) == ["pipeline: must be a mapping with a 'dag' key"]


def test_invalid_yaml_is_reported_with_its_line() -> None:
    with pytest.raises(PipelineError, match=r"pipeline: line \d+: is not valid YAML"):
        load_document("dag:\n  steps: [a\n", "pipeline")


def test_parameter_assignments_are_split_at_the_first_equals_sign() -> None:
    assert parse_parameter_assignments(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(PipelineError, match="--parameter: oops: must look like NAME=VALUE"):
        parse_parameter_assignments(["oops"])
