"""Pipelines shared by the transpiler tests, and helpers to find things in a rendered Workflow."""

from __future__ import annotations

from typing import Any

import yaml

from workflows.lint import lint_document

FULL_PIPELINE_YAML = """
name: churn-model
description: Train and evaluate the churn model on every region.
parameters:
  learning_rate: 0.05
  regions: [eu, us, apac]
dag:
  start_at: prepare
  steps:
    prepare:
      type: task
      command: python -m churn.prepare --out /data/prepared
      retry: {limit: 2, backoff: {duration: 30s, factor: 2, max_duration: 10m}}
      next: train
      on_failure: notify
    train:
      type: parallel
      branches:
        xgboost:
          start_at: fit
          steps:
            fit:
              type: task
              command: python -m churn.fit --model xgboost --lr {{parameters.learning_rate}}
              mode_config: {argo: {cpu_limit: "2", memory_limit: 4Gi}}
              next: done
            done: {type: success}
        linear:
          start_at: fit
          steps:
            fit:
              type: task
              command: python -m churn.fit --model linear
              next: done
            done: {type: success}
      next: score
    score:
      type: map
      iterate_on: regions
      iterate_as: region
      parallelism: 2
      branch:
        start_at: predict
        steps:
          predict:
            type: task
            command: python -m churn.predict --region {{item.region}}
            next: done
          done: {type: success}
      next: evaluate
    evaluate:
      type: dag
      tasks:
        metrics: {command: python -m churn.metrics}
        plots: {command: python -m churn.plots}
        report:
          command: python -m churn.report
          depends: [metrics, plots]
      next: success
    notify:
      type: task
      command: python -m churn.notify --channel ml-alerts
      next: fail
    success: {type: success}
    fail: {type: fail}
"""

FULL_CONFIG_YAML = """
docker_image: registry.example.com/churn:${tag}
image_pull_policy: IfNotPresent
secrets_from_k8s:
  - DB_PASSWORD=churn-db:password
"""

# A Magnus user's files as they have them: the pipeline declares no parameters (they come from the
# --parameters-file), uses Magnus's `executor_config` step override and keeps a `fail` step no path reaches;
# the configuration is wrapped as Magnus's Argo executor documentation writes it, with a Magnus service
# beside it and its ${docker_image} filled from MAGNUS_VAR_docker_image.
MAGNUS_PIPELINE_YAML = """
dag:
  description: Fit the model once per seed.
  start_at: prepare
  steps:
    prepare:
      type: task
      command_type: shell
      command: python -m train.prepare --lr {{parameters.lr}}
      next: fit
    fit:
      type: map
      iterate_on: seeds
      iterate_as: seed
      branch:
        start_at: train
        steps:
          train:
            type: task
            command: python -m train.fit --seed {{item.seed}}
            executor_config:
              argo:
                cpu_limit: "1"
            next: success
          success:
            type: success
          fail:
            type: fail
      next: success
    success:
      type: success
    fail:
      type: fail
"""

MAGNUS_CONFIG_YAML = """
executor:
  type: "argo"
  config:
    docker_image: ${docker_image}
    output_file: pipeline.yaml
    cpu_limit: 250m
    memory_limit: 1G
    enable_caching: false
    image_pull_policy: IfNotPresent
    secrets_from_k8s:
      DB_PASSWORD: churn-db:password
run_log_store:
  type: file-system
"""

MAGNUS_PARAMETERS_YAML = """
lr: 0.01
seeds: [1, 2, 3]
"""

IMAGE = "registry.example.com/churn:1.0"


def full_pipeline() -> dict[str, Any]:
    return yaml.safe_load(FULL_PIPELINE_YAML)


def full_config() -> dict[str, Any]:
    return yaml.safe_load(FULL_CONFIG_YAML)


def one_task_pipeline(**task: Any) -> dict[str, Any]:
    """A pipeline whose only work is one task called ``train`` (fields given override the defaults)."""
    step = {"type": "task", "command": "python train.py", "next": "success", **task}
    return {"dag": {"start_at": "train", "steps": {"train": step, "success": {"type": "success"}}}}


def chain(*steps: tuple[str, dict[str, Any]], parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pipeline of the given (name, step) pairs, starting at the first; terminals are added as needed."""
    graph = dict(steps)
    targets = {step.get(key) for _, step in steps for key in ("next", "on_failure")}
    for terminal in ("success", "fail"):
        if terminal in targets:
            graph.setdefault(terminal, {"type": terminal})
    document: dict[str, Any] = {"dag": {"start_at": steps[0][0], "steps": graph}}
    if parameters is not None:
        document["parameters"] = parameters
    return document


def templates(workflow: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {template["name"]: template for template in workflow["spec"]["templates"]}


def template(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    return templates(workflow)[name]


def dag_tasks(workflow: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    return {task["name"]: task for task in template(workflow, name)["dag"]["tasks"]}


def container(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    return template(workflow, name)["container"]


def lint_errors(workflow: dict[str, Any]) -> list[str]:
    """What our Argo linter says about a transpiled workflow: nothing, for every pipeline we accept."""
    result = lint_document(workflow)
    assert result.linted
    return [f"{error.path}: {error.message}" for error in result.errors]
