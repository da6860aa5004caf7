"""Each configuration key: its default, a configuration value, a per-step override, and a bad value."""

from typing import Any

import pytest

from workflows.pipeline import PipelineError, transpile
from workflows.tests.pipeline_examples import (
    IMAGE,
    chain,
    container,
    lint_errors,
    one_task_pipeline,
    template,
)


def transpiled(
    config: dict[str, Any], pipeline: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """The transpiled workflow, which must also pass our linter."""
    workflow = transpile(
        pipeline or one_task_pipeline(), {"docker_image": IMAGE, **config}, **kwargs
    ).workflow
    assert lint_errors(workflow) == []
    return workflow


def problems(config: dict[str, Any], pipeline: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
    with pytest.raises(PipelineError) as caught:
        transpile(pipeline or one_task_pipeline(), config, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def test_defaults_give_every_step_250m_cpu_1g_memory_requests_equal_to_limits_and_always_pull() -> None:
    train = container(transpiled({}), "train")
    assert train["image"] == IMAGE
    assert train["imagePullPolicy"] == "Always"
    assert train["resources"] == {
        "limits": {"cpu": "250m", "memory": "1G"},
        "requests": {"cpu": "250m", "memory": "1G"},
    }
    assert "env" not in train
    assert "memoize" not in template(transpiled({}), "train")


def test_output_file_defaults_to_pipeline_yaml_and_can_be_set() -> None:
    assert transpile(one_task_pipeline(), {"docker_image": IMAGE}).output_file == "pipeline.yaml"
    assert (
        transpile(one_task_pipeline(), {"docker_image": IMAGE, "output_file": "wf.yaml"}).output_file
        == "wf.yaml"
    )


def test_limits_from_the_configuration_also_become_the_requests() -> None:
    train = container(transpiled({"cpu_limit": "2", "memory_limit": "4Gi"}), "train")
    assert train["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi"},
        "requests": {"cpu": "2", "memory": "4Gi"},
    }


def test_explicit_requests_are_kept_apart_from_the_limits() -> None:
    train = container(transpiled({"cpu_limit": 2, "cpu_request": "500m", "memory_request": "256Mi"}), "train")
    assert train["resources"] == {
        "limits": {"cpu": "2", "memory": "1G"},
        "requests": {"cpu": "500m", "memory": "256Mi"},
    }


def test_a_step_overrides_any_setting_under_mode_config_argo() -> None:
    overrides = {
        "docker_image": "registry.example.com/gpu:2",
        "cpu_limit": "4",
        "memory_limit": "16Gi",
        "memory_request": "8Gi",
        "image_pull_policy": "Never",
        "secrets_from_k8s": ["TOKEN=hub:token"],
    }
    pipeline = one_task_pipeline(mode_config={"argo": overrides})
    train = container(transpiled({"secrets_from_k8s": ["DB=db:password"]}, pipeline), "train")
    assert train["image"] == "registry.example.com/gpu:2"
    assert train["imagePullPolicy"] == "Never"
    assert train["resources"] == {
        "limits": {"cpu": "4", "memory": "16Gi"},
        "requests": {"cpu": "4", "memory": "8Gi"},
    }
    assert train["env"] == [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hub", "key": "token"}}}]


def test_an_override_on_a_parallel_step_cascades_into_its_branches_but_not_its_siblings() -> None:
    branch = {
        "start_at": "fit",
        "steps": {"fit": {"type": "task", "command": "fit", "next": "ok"}, "ok": {"type": "success"}},
    }
    pipeline = chain(
        (
            "fan",
            {
                "type": "parallel",
                "branches": {"a": branch},
                "next": "after",
                "mode_config": {"argo": {"cpu_limit": "3"}},
            },
        ),
        ("after", {"type": "task", "command": "after", "next": "success"}),
    )
    workflow = transpiled({}, pipeline)
    assert container(workflow, "fan-a-fit")["resources"]["limits"]["cpu"] == "3"
    assert container(workflow, "after")["resources"]["limits"]["cpu"] == "250m"


@pytest.mark.parametrize("policy", ["IfNotPresent", "Always", "Never"])
def test_each_image_pull_policy_is_passed_to_the_container(policy: str) -> None:
    assert container(transpiled({"image_pull_policy": policy}), "train")["imagePullPolicy"] == policy


def test_an_unknown_image_pull_policy_is_refused_with_the_allowed_ones() -> None:
    assert problems({"docker_image": IMAGE, "image_pull_policy": "always"}) == [
        "config: image_pull_policy: 'always' must be one of IfNotPresent, Always, Never"
    ]
    pipeline = one_task_pipeline(mode_config={"argo": {"image_pull_policy": "Sometimes"}})
    assert problems({"docker_image": IMAGE}, pipeline) == [
        "step train: mode_config.argo.image_pull_policy: "
        "'Sometimes' must be one of IfNotPresent, Always, Never"
    ]


def test_secrets_become_environment_variables_from_secret_key_refs() -> None:
    secrets = ["DB_PASSWORD=churn-db:password", "HF_TOKEN = hub-token : token"]
    train = container(transpiled({"secrets_from_k8s": secrets}), "train")
    assert train["env"] == [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "churn-db", "key": "password"}}},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hub-token", "key": "token"}}},
    ]


def test_terminal_steps_get_no_secrets() -> None:
    pipeline = chain(("train", {"type": "task", "command": "train", "next": "fail"}))
    assert "env" not in container(transpiled({"secrets_from_k8s": ["A=s:k"]}, pipeline), "fail")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("DB_PASSWORD", "'DB_PASSWORD' must look like EnvVar=SecretName:Key"),
        ("DB_PASSWORD=churn-db", "'DB_PASSWORD=churn-db' must look like EnvVar=SecretName:Key"),
        ("1DB=churn-db:password", "'1DB' is not a valid environment variable name"),
        ("DB=Churn_DB:password", "'Churn_DB' is not a valid Secret name (a lowercase DNS name)"),
        ("DB=churn-db:pass word", "'pass word' is not a valid Secret key"),
        (42, "42 must look like EnvVar=SecretName:Key"),
    ],
)
def test_a_bad_secret_entry_is_reported_with_its_index(entry: Any, problem: str) -> None:
    config = {"docker_image": IMAGE, "secrets_from_k8s": ["OK=ok:key", entry]}
    assert problems(config) == [f"config: secrets_from_k8s[1]: {problem}"]


def test_two_entries_for_one_variable_are_refused() -> None:
    config = {"docker_image": IMAGE, "secrets_from_k8s": ["A=one:key", "A=two:key"]}
    assert problems(config) == ["config: secrets_from_k8s[1]: A is already set by an earlier entry"]


def test_invalid_quantities_are_refused_with_examples() -> None:
    assert problems({"docker_image": IMAGE, "cpu_limit": "lots"}) == [
        "config: cpu_limit: 'lots' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)"
    ]
    pipeline = one_task_pipeline(mode_config={"argo": {"memory_limit": "1Gb"}})
    assert problems({"docker_image": IMAGE}, pipeline) == [
        "step train: mode_config.argo.memory_limit: '1Gb' has an unknown suffix 'Gb' "
        "(known: n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)"
    ]


def test_a_request_above_its_limit_is_refused_where_it_is_set() -> None:
    assert problems({"docker_image": IMAGE, "cpu_request": "1"}) == [
        "config: cpu_request: 1 is more than cpu_limit 250m"
    ]
    pipeline = one_task_pipeline(mode_config={"argo": {"memory_limit": "512Mi"}})
    assert problems({"docker_image": IMAGE, "memory_request": "900Mi"}, pipeline) == [
        "step train: memory_request: 900Mi is more than memory_limit 512Mi"
    ]


def test_a_missing_image_is_reported_once_when_no_step_has_one() -> None:
    assert problems({}) == ["config: docker_image: is required (no step sets one under mode_config.argo)"]


def test_a_missing_image_is_reported_per_step_when_some_steps_have_their_own() -> None:
    pipeline = chain(
        (
            "gpu",
            {"type": "task", "command": "x", "next": "cpu", "mode_config": {"argo": {"docker_image": IMAGE}}},
        ),
        ("cpu", {"type": "task", "command": "y", "next": "success"}),
    )
    assert problems({}, pipeline) == [
        "step cpu: docker_image: no image: set docker_image in the configuration",
        "step success: docker_image: no image: set docker_image in the configuration",
    ]


def test_placeholders_are_filled_from_argoml_var_environment_variables() -> None:
    config = {"docker_image": "registry.example.com/churn:${tag}", "secrets_from_k8s": ["A=${secret}:key"]}
    environ = {"ARGOML_VAR_tag": "abc123", "ARGOML_VAR_secret": "team-secret"}
    train = container(transpile(one_task_pipeline(), config, environ=environ).workflow, "train")
    assert train["image"] == "registry.example.com/churn:abc123"
    assert train["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "team-secret"


def test_a_placeholder_without_its_environment_variable_is_reported() -> None:
    assert problems({"docker_image": "churn:${tag}"}, environ={"tag": "1"}) == [
        "config: docker_image: '${tag}' needs the environment variable ARGOML_VAR_tag (or MAGNUS_VAR_tag)"
    ]


def test_unknown_keys_are_refused_with_a_suggestion() -> None:
    assert problems({"docker_image": IMAGE, "cpu_limt": "1"}) == [
        "config: cpu_limt: unknown key 'cpu_limt'; did you mean 'cpu_limit'?"
    ]
    pipeline = one_task_pipeline(mode_config={"argo": {"output_file": "x.yaml"}, "local": {}})
    assert problems({"docker_image": IMAGE}, pipeline) == [
        "step train: mode_config.argo.output_file: is set once for the whole workflow, in the configuration",
        "step train: mode_config.local: only 'argo' is supported",
    ]


def test_enable_caching_memoizes_tasks_keyed_by_the_values_they_read() -> None:
    pipeline = one_task_pipeline(command="python train.py --lr {{parameters.lr}}")
    pipeline["parameters"] = {"lr": 0.1}
    workflow = transpiled({"enable_caching": True}, pipeline)
    memoize = template(workflow, "train")["memoize"]
    assert memoize["cache"] == {"configMap": {"name": "pipeline-step-cache"}}
    assert memoize["maxAge"] == "720h"
    assert memoize["key"].startswith("train-")
    assert memoize["key"].endswith("-{{workflow.parameters.lr}}")


def test_the_cache_key_changes_with_the_image() -> None:
    first = template(transpiled({"enable_caching": True}), "train")["memoize"]["key"]
    second = template(transpiled({"enable_caching": True, "docker_image": "other:1"}), "train")["memoize"][
        "key"
    ]
    assert first != second


def test_caching_can_be_turned_off_for_one_step_and_never_applies_to_terminals() -> None:
    pipeline = chain(
        ("train", {"type": "task", "command": "train", "next": "publish", "on_failure": "fail"}),
        (
            "publish",
            {
                "type": "task",
                "command": "publish",
                "next": "success",
                "mode_config": {"argo": {"enable_caching": False}},
            },
        ),
    )
    workflow = transpiled({"enable_caching": True}, pipeline)
    assert "memoize" in template(workflow, "train")
    assert "memoize" not in template(workflow, "publish")
    assert "memoize" not in template(workflow, "fail")


def test_enable_caching_must_be_true_or_false() -> None:
    assert problems({"docker_image": IMAGE, "enable_caching": "yes please"}) == [
        "config: enable_caching: 'yes please' must be true or false"
    ]


def test_caching_warns_about_what_argo_needs() -> None:
    result = transpile(one_task_pipeline(), {"docker_image": IMAGE, "enable_caching": True})
    assert any("ConfigMap 'pipeline-step-cache'" in warning for warning in result.warnings)


def test_a_configuration_that_is_not_a_mapping_is_refused() -> None:
    assert problems(["docker_image"]) == ["config: must be a mapping of settings, not list"]
