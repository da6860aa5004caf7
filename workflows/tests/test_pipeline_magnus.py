"""A Magnus user's files, unchanged: the wrapped executor configuration, three ways to write
``secrets_from_k8s``, ``MAGNUS_VAR_`` variables, undeclared parameters, ``executor_config``, a lone fail,
``command_type: shell``."""

from typing import Any

import pytest
import yaml

from workflows.pipeline import PipelineError, read_parameters_file, transpile
from workflows.tests.pipeline_examples import (
    IMAGE,
    MAGNUS_CONFIG_YAML,
    MAGNUS_PARAMETERS_YAML,
    MAGNUS_PIPELINE_YAML,
    chain,
    container,
    dag_tasks,
    lint_errors,
    one_task_pipeline,
    templates,
)

MAGNUS_ENV = {"MAGNUS_VAR_docker_image": IMAGE}
SECRET_ENV = {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "churn-db", "key": "password"}}}


def problems(pipeline: Any, config: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(PipelineError) as caught:
        transpile(pipeline, config, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def magnus_parameters() -> dict[str, str]:
    return read_parameters_file(yaml.safe_load(MAGNUS_PARAMETERS_YAML))


def test_the_magnus_files_transpile_unchanged_into_a_workflow_our_linter_accepts() -> None:
    result = transpile(
        yaml.safe_load(MAGNUS_PIPELINE_YAML),
        yaml.safe_load(MAGNUS_CONFIG_YAML),
        parameters=magnus_parameters(),
        environ=MAGNUS_ENV,
    )
    workflow = result.workflow
    assert lint_errors(workflow) == []
    assert workflow["spec"]["arguments"]["parameters"] == [
        {"name": "lr", "value": "0.01"},
        {"name": "seeds", "value": "[1, 2, 3]"},
    ]
    assert dag_tasks(workflow, "fit")["each"]["withParam"] == "{{workflow.parameters.seeds}}"
    train = container(workflow, "fit-train")
    assert train["image"] == IMAGE
    assert train["imagePullPolicy"] == "IfNotPresent"
    assert train["resources"]["limits"] == {"cpu": "1", "memory": "1G"}
    assert train["env"] == [SECRET_ENV]
    assert container(workflow, "prepare")["command"][-1] == "{{workflow.parameters.lr}}"
    assert "fail" not in templates(workflow)
    assert "fit-fail" not in templates(workflow)
    assert result.output_file == "pipeline.yaml"
    assert result.warnings == (
        "step fit.fail: no step leads to this fail step; it is left out",
        "step fail: no step leads to this fail step; it is left out",
        "config: run_log_store: ignored (a Magnus service; Argo keeps its own logs and artifacts)",
    )


@pytest.mark.parametrize("wrapper", ["executor", "mode"])
def test_the_configuration_may_be_wrapped_as_magnus_writes_it(wrapper: str) -> None:
    config = {wrapper: {"type": "argo", "config": {"docker_image": IMAGE, "cpu_limit": "500m"}}}
    train = container(transpile(one_task_pipeline(), config).workflow, "train")
    assert (train["image"], train["resources"]["limits"]["cpu"]) == (IMAGE, "500m")


def test_another_executor_type_is_a_clear_error_naming_the_supported_one() -> None:
    config = {"executor": {"type": "local-container", "config": {"docker_image": IMAGE}}}
    assert problems(one_task_pipeline(), config) == [
        "config: executor.type: 'local-container' is not supported: the only executor type is 'argo'"
    ]


def test_a_wrapped_configuration_names_what_is_wrong_with_the_wrapper() -> None:
    both = {"executor": {"type": "argo"}, "mode": {"type": "argo"}}
    assert problems(one_task_pipeline(), both) == [
        "config: mode: executor and mode are two names for one block; keep one of them"
    ]
    odd = {"mode": {"type": "argo", "confg": {}, "config": {"docker_image": IMAGE}}, "catalogue": {}}
    assert problems(one_task_pipeline(), odd) == [
        "config: catalogue: unknown key 'catalogue'; did you mean 'catalog'?",
        "config: mode.confg: unknown key 'confg'; did you mean 'config'?",
    ]
    assert problems(one_task_pipeline(), {"mode": "argo"}) == [
        "config: mode: must be a mapping like {type: argo, config: {docker_image: ...}}"
    ]
    assert problems(one_task_pipeline(), {"mode": {"type": "argo", "config": ["docker_image"]}}) == [
        "config: mode.config: must be a mapping of settings (docker_image, ...)"
    ]


def test_settings_inside_the_wrapper_are_checked_as_flat_ones_are() -> None:
    config = {"executor": {"type": "argo", "config": {"docker_image": IMAGE, "cpu_limit": "lots"}}}
    assert problems(one_task_pipeline(), config) == [
        "config: cpu_limit: 'lots' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)"
    ]


@pytest.mark.parametrize(
    "secrets",
    [
        ["DB_PASSWORD=churn-db:password"],
        "DB_PASSWORD=churn-db:password",
        {"DB_PASSWORD": "churn-db:password"},
        {"DB_PASSWORD": " churn-db : password "},
    ],
)
def test_secrets_from_k8s_is_a_list_a_single_entry_or_a_mapping(secrets: Any) -> None:
    config = {"docker_image": IMAGE, "secrets_from_k8s": secrets}
    assert container(transpile(one_task_pipeline(), config).workflow, "train")["env"] == [SECRET_ENV]


def test_every_malformed_secret_entry_is_named() -> None:
    listed = {"docker_image": IMAGE, "secrets_from_k8s": ["A=a:k", "B", "C=Bad_Name:k", "A=b:k"]}
    assert problems(one_task_pipeline(), listed) == [
        "config: secrets_from_k8s[1]: 'B' must look like EnvVar=SecretName:Key",
        "config: secrets_from_k8s[2]: 'Bad_Name' is not a valid Secret name (a lowercase DNS name)",
        "config: secrets_from_k8s[3]: A is already set by an earlier entry",
    ]
    mapped = {"docker_image": IMAGE, "secrets_from_k8s": {"OK": "a:k", "NO_KEY": "a", "1X": "a:k", "N": 3}}
    assert problems(one_task_pipeline(), mapped) == [
        "config: secrets_from_k8s.NO_KEY: 'a' must look like SecretName:Key",
        "config: secrets_from_k8s.1X: '1X' is not a valid environment variable name",
        "config: secrets_from_k8s.N: 3 must look like SecretName:Key",
    ]
    single = {"docker_image": IMAGE, "secrets_from_k8s": "DB_PASSWORD"}
    assert problems(one_task_pipeline(), single) == [
        "config: secrets_from_k8s: 'DB_PASSWORD' must look like EnvVar=SecretName:Key"
    ]
    assert problems(one_task_pipeline(), {"docker_image": IMAGE, "secrets_from_k8s": 7}) == [
        "config: secrets_from_k8s: must be a list of EnvVar=SecretName:Key entries, one such entry, "
        "or a mapping EnvVar: SecretName:Key"
    ]


def test_placeholders_in_a_secrets_mapping_are_filled() -> None:
    config = {"docker_image": IMAGE, "secrets_from_k8s": {"DB_PASSWORD": "${db}:password"}}
    workflow = transpile(one_task_pipeline(), config, environ={"ARGOML_VAR_db": "churn-db"}).workflow
    assert container(workflow, "train")["env"] == [SECRET_ENV]


def test_variables_come_from_argoml_var_and_else_from_magnus_var() -> None:
    config = {"docker_image": "churn:${tag}"}

    def image(environ: dict[str, str]) -> str:
        return container(transpile(one_task_pipeline(), config, environ=environ).workflow, "train")["image"]

    assert image({"MAGNUS_VAR_tag": "m"}) == "churn:m"
    assert image({"ARGOML_VAR_tag": "a", "MAGNUS_VAR_tag": "m"}) == "churn:a"


def test_a_lone_fail_step_is_a_warning_and_is_left_out_but_other_unreachable_steps_are_errors() -> None:
    pipeline = one_task_pipeline()
    pipeline["dag"]["steps"]["fail"] = {"type": "fail"}
    result = transpile(pipeline, {"docker_image": IMAGE})
    assert result.warnings == ("step fail: no step leads to this fail step; it is left out",)
    assert [task["name"] for task in dag_tasks(result.workflow, "main").values()] == ["train"]

    pipeline["dag"]["steps"]["orphan"] = {"type": "task", "command": "x", "next": "success"}
    assert problems(pipeline, {"docker_image": IMAGE}) == [
        "step orphan: is not reachable from start_at 'train'"
    ]


def test_a_fail_step_that_an_on_failure_reaches_still_runs() -> None:
    pipeline = chain(("train", {"type": "task", "command": "x", "next": "success", "on_failure": "fail"}))
    result = transpile(pipeline, {"docker_image": IMAGE})
    assert result.warnings == ()
    assert "fail" in dag_tasks(result.workflow, "main")


def test_executor_config_is_read_as_mode_config_and_both_together_are_an_error() -> None:
    pipeline = one_task_pipeline(executor_config={"argo": {"memory_limit": "2Gi"}})
    workflow = transpile(pipeline, {"docker_image": IMAGE}).workflow
    assert container(workflow, "train")["resources"]["limits"]["memory"] == "2Gi"

    both = one_task_pipeline(executor_config={"argo": {"cpu_limt": "1"}}, mode_config={})
    assert problems(both, {"docker_image": IMAGE}) == [
        "step train: executor_config: is another name for mode_config; keep one of them",
        "step train: executor_config.argo.cpu_limt: unknown key 'cpu_limt'; did you mean 'cpu_limit'?",
    ]


def test_undeclared_parameters_become_workflow_arguments_and_steps_may_use_them() -> None:
    pipeline = one_task_pipeline(command="python train.py --lr {{parameters.lr}}")
    pipeline["parameters"] = {"epochs": 3}
    workflow = transpile(pipeline, {"docker_image": IMAGE}, parameters={"lr": "0.1", "note": "x"}).workflow
    assert workflow["spec"]["arguments"]["parameters"] == [
        {"name": "epochs", "value": "3"},
        {"name": "lr", "value": "0.1"},
        {"name": "note", "value": "x"},
    ]
    assert lint_errors(workflow) == []


def test_a_reference_to_a_parameter_neither_declared_nor_given_is_still_an_error() -> None:
    pipeline = one_task_pipeline(command="python train.py --lr {{parameters.lr}}")
    assert problems(pipeline, {"docker_image": IMAGE}) == [
        "step train: command: '{{parameters.lr}}' names no pipeline parameter"
    ]


def test_a_map_iterates_over_an_undeclared_parameter_given_as_a_json_list() -> None:
    fit = {"type": "task", "command": "fit {{item.seed}}", "next": "done"}
    branch = {"start_at": "fit", "steps": {"fit": fit, "done": {"type": "success"}}}
    sweep = {"type": "map", "iterate_on": "seeds", "iterate_as": "seed", "branch": branch, "next": "success"}
    pipeline = chain(("sweep", sweep))
    workflow = transpile(pipeline, {"docker_image": IMAGE}, parameters={"seeds": "[1,2,3]"}).workflow
    assert workflow["spec"]["arguments"]["parameters"] == [{"name": "seeds", "value": "[1,2,3]"}]
    assert dag_tasks(workflow, "sweep")["each"]["withParam"] == "{{workflow.parameters.seeds}}"
    assert problems(pipeline, {"docker_image": IMAGE}, parameters={"seeds": "1"}) == [
        '--parameter seeds: must be a JSON list like ["a", "b"] because map step sweep iterates on it'
    ]
    assert problems(pipeline, {"docker_image": IMAGE}) == [
        "step sweep: iterate_on: 'seeds' is not a pipeline parameter"
    ]


def test_a_parameters_file_holds_values_of_any_kind_as_argument_text() -> None:
    assert read_parameters_file({"lr": 0.1, "seeds": [1, 2], "flag": True, "cfg": {"a": 1}, "name": "x"}) == {
        "lr": "0.1",
        "seeds": "[1, 2]",
        "flag": "true",
        "cfg": '{"a": 1}',
        "name": "x",
    }
    assert read_parameters_file(None) == {}
    with pytest.raises(PipelineError) as caught:
        read_parameters_file(["lr"])
    assert str(caught.value) == "--parameters-file: must be a mapping of parameter name: value"
    with pytest.raises(PipelineError) as caught:
        read_parameters_file({"lr": None, "seed": None})
    assert str(caught.value) == "--parameters-file: lr: has no value\n--parameters-file: seed: has no value"


def test_command_type_shell_is_how_every_task_runs_and_the_other_types_say_what_to_write() -> None:
    shell = transpile(one_task_pipeline(command_type="shell"), {"docker_image": IMAGE}).workflow
    assert shell == transpile(one_task_pipeline(), {"docker_image": IMAGE}).workflow
    python = problems(one_task_pipeline(command_type="python"), {"docker_image": IMAGE})
    assert python == [
        "step train: command_type: 'python' is not supported: it was a Python function Magnus called in the "
        "container; write the shell command that runs it (command: python -m your.module, or python -c "
        "'from your.module import f; f()')"
    ]
    assert "did you mean" not in python[0]
    (notebook,) = problems(one_task_pipeline(command_type="notebook"), {"docker_image": IMAGE})
    assert "command_type: 'notebook' is not supported" in notebook
    assert "papermill" in notebook
    assert problems(one_task_pipeline(command_type="bash"), {"docker_image": IMAGE}) == [
        "step train: command_type: 'bash' must be shell: every task's command runs in a shell here"
    ]
