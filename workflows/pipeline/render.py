"""Render a checked pipeline as an Argo Workflow (a plain dict), one template per step.

How the pipeline maps onto Argo:
- every (sub-)pipeline is a DAG template; ``next`` becomes ``depends: "<step>.Succeeded"`` on the next step
  and ``on_failure`` becomes ``depends: "<step>.Failed || <step>.Errored"`` on the handler;
- a task is a container template, with its retries as the template's ``retryStrategy``;
- a parallel step is a DAG template with one task per branch, so the next step waits for all of them;
- a map step is a DAG template whose single task loops (``withParam``/``withItems``) over the branch template,
  with the template's ``parallelism`` bounding how many items run at once;
- a dag step is a DAG template whose tasks depend on each other as written;
- a fail step is a container that exits non-zero, so the pipeline's DAG fails when it is reached. A success
  step is only rendered where an ``on_failure`` path may rejoin it: Argo derives a DAG's phase from its leaf
  tasks, and a leaf skipped because of a handled failure would otherwise fail the DAG.

The Workflow is counted as it is written (the JSON of each template once it is complete) and rendering
stops with a PipelineError once it passes ``limits.current().workflow_bytes``: each step's template repeats
the configuration's secrets and the items of the maps around it, so 25 KB of pipeline and configuration can
ask for a Workflow of megabytes, which the cluster could not store anyway.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import limits

from .config import ExecutorConfig, StepSettings, apply_overrides
from .errors import PipelineError, Problem
from .model import DagStep, Graph, MapStep, ParallelStep, Pipeline, Step, TaskStep, TerminalStep
from .parse import task_name

API_VERSION = "argoproj.io/v1alpha1"
ENTRYPOINT = "main"
CACHE_MAX_AGE = "720h"
MAX_TEMPLATE_NAME = 63
DESCRIPTION_ANNOTATION = "workflows.argoproj.io/description"
PIPELINE_LABEL = "argoml.io/pipeline"


def render_workflow(pipeline: Pipeline, config: ExecutorConfig, arguments: dict[str, str]) -> dict[str, Any]:
    """The Workflow manifest of a pipeline and configuration that passed every check."""
    metadata: dict[str, Any] = {
        "generateName": f"{pipeline.name}-",
        "labels": {PIPELINE_LABEL: pipeline.name},
    }
    if pipeline.description:
        metadata["annotations"] = {DESCRIPTION_ANNOTATION: pipeline.description}
    spec: dict[str, Any] = {"entrypoint": ENTRYPOINT}
    if arguments:
        spec["arguments"] = {
            "parameters": [{"name": name, "value": value} for name, value in arguments.items()]
        }
    renderer = _Renderer(cache_name=f"{pipeline.name}-step-cache")
    renderer.count({"metadata": metadata, "spec": spec}, "pipeline", "its description and parameters")
    renderer.names.claim(ENTRYPOINT)
    renderer.render_graph(pipeline.graph, ENTRYPOINT, "", config.defaults, (), "pipeline")
    spec["templates"] = renderer.templates
    return {"apiVersion": API_VERSION, "kind": "Workflow", "metadata": metadata, "spec": spec}


@dataclass
class _TemplateNames:
    """Template names are global in a Workflow: claim each once, suffixing clashes, shortening long ones."""

    taken: set[str] = field(default_factory=set)

    def claim(self, wanted: str) -> str:
        name = _shorten(wanted)
        suffix = 2
        while name in self.taken:
            name = _shorten(f"{wanted}-{suffix}")
            suffix += 1
        self.taken.add(name)
        return name


def _shorten(name: str) -> str:
    if len(name) <= MAX_TEMPLATE_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_TEMPLATE_NAME - 9].rstrip('-')}-{digest}"


@dataclass
class _Renderer:
    cache_name: str
    names: _TemplateNames = field(default_factory=_TemplateNames)
    templates: list[dict[str, Any]] = field(default_factory=list)
    written: int = 0

    def count(self, part: dict[str, Any], where: str, what: str) -> None:
        """Add a finished part of the Workflow to its size; PipelineError once past the bound, naming
        `where` it got there and `what` that part holds."""
        size = len(json.dumps(part, separators=(",", ":")))
        self.written += size
        if self.written > limits.current().workflow_bytes:
            message = limits.too_many("bytes of Workflow", self.written, "workflow_bytes")
            raise PipelineError(
                [Problem(where, "", f"{message}: it passes the bound here ({size} bytes: {what})")]
            )

    def render_graph(
        self,
        graph: Graph,
        name: str,
        prefix: str,
        settings: StepSettings,
        items: tuple[str, ...],
        where: str,
    ) -> str:
        """A DAG template for a (sub-)pipeline; ``name`` is already claimed. Returns the template name."""
        template: dict[str, Any] = {"name": name}
        self.templates.append(template)
        _add_inputs(template, items)
        depends = _incoming_edges(graph)
        rejoins = any(step.on_failure for step in graph.steps.values())
        tasks = []
        for step in _walk_order(graph):
            if isinstance(step, TerminalStep) and step.kind == "success" and not rejoins:
                continue
            task = self._task(step, prefix, settings, items)
            if depends.get(step.name):
                task["depends"] = " || ".join(depends[step.name])
            tasks.append(task)
        template["dag"] = {"tasks": tasks}
        self.count(template, where, _graph_parts(len(tasks), items))
        return name

    def _task(
        self, step: Step, prefix: str, settings: StepSettings, items: tuple[str, ...]
    ) -> dict[str, Any]:
        name = task_name(step.name)
        task: dict[str, Any] = {
            "name": name,
            "template": self.render_step(step, prefix + name, settings, items),
        }
        if items:
            task["arguments"] = {"parameters": _pass_items(items)}
        return task

    def render_step(self, step: Step, wanted: str, parent: StepSettings, items: tuple[str, ...]) -> str:
        """The template of one step (and the templates nested in it); returns its name."""
        settings = apply_overrides(parent, step.overrides)
        name = self.names.claim(wanted)
        if isinstance(step, TaskStep | TerminalStep):
            template = self._container_template(step, name, settings, items)
            self.templates.append(template)
            self.count(template, f"step {step.path}", _container_parts(settings, items))
        elif isinstance(step, ParallelStep):
            self._parallel_template(step, name, settings, items)
        elif isinstance(step, MapStep):
            self._map_template(step, name, settings, items)
        elif isinstance(step, DagStep):
            self._dag_template(step, name, settings, items)
        return name

    def _container_template(
        self, step: TaskStep | TerminalStep, name: str, settings: StepSettings, items: tuple[str, ...]
    ) -> dict[str, Any]:
        template: dict[str, Any] = {"name": name}
        _add_inputs(template, items)
        container: dict[str, Any] = {
            "image": settings.docker_image,
            "imagePullPolicy": settings.image_pull_policy,
            "command": list(_argv(step)),
            "resources": {
                "limits": {"cpu": settings.cpu_limit, "memory": settings.memory_limit},
                "requests": {
                    "cpu": settings.effective_cpu_request,
                    "memory": settings.effective_memory_request,
                },
            },
        }
        if settings.secrets_from_k8s and isinstance(step, TaskStep):
            # Terminals only print a line; they get no secrets they do not need.
            container["env"] = [
                {
                    "name": secret.env_name,
                    "valueFrom": {"secretKeyRef": {"name": secret.secret_name, "key": secret.secret_key}},
                }
                for secret in settings.secrets_from_k8s
            ]
        if isinstance(step, TaskStep):
            if step.retry is not None:
                template["retryStrategy"] = _retry_strategy(step)
            if settings.enable_caching:
                template["memoize"] = self._memoize(step, name, container)
        template["container"] = container
        return template

    def _memoize(self, step: TaskStep, name: str, container: dict[str, Any]) -> dict[str, Any]:
        """Key the cache by what decides the step's result: its container and the values it reads."""
        digest = hashlib.sha256(json.dumps(container, sort_keys=True).encode()).hexdigest()[:12]
        references = [f"{{{{workflow.parameters.{parameter}}}}}" for parameter in step.command.parameters]
        references += [f"{{{{inputs.parameters.{item}}}}}" for item in step.command.items]
        return {
            "key": "-".join([name, digest, *references]),
            "maxAge": CACHE_MAX_AGE,
            "cache": {"configMap": {"name": self.cache_name}},
        }

    def _parallel_template(
        self, step: ParallelStep, name: str, settings: StepSettings, items: tuple[str, ...]
    ) -> None:
        template: dict[str, Any] = {"name": name}
        self.templates.append(template)
        _add_inputs(template, items)
        tasks = []
        for branch_name, branch in step.branches.items():
            branch_template = self.names.claim(f"{name}-{task_name(branch_name)}")
            where = f"step {step.path}"
            self.render_graph(branch, branch_template, f"{branch_template}-", settings, items, where)
            task: dict[str, Any] = {"name": task_name(branch_name), "template": branch_template}
            if items:
                task["arguments"] = {"parameters": _pass_items(items)}
            tasks.append(task)
        template["dag"] = {"failFast": False, "tasks": tasks}
        self.count(template, f"step {step.path}", _graph_parts(len(tasks), items))

    def _map_template(self, step: MapStep, name: str, settings: StepSettings, items: tuple[str, ...]) -> None:
        template: dict[str, Any] = {"name": name}
        self.templates.append(template)
        _add_inputs(template, items)
        if step.parallelism is not None:
            template["parallelism"] = step.parallelism
        inner_items = (*items, step.iterate_as)
        branch_template = self.names.claim(f"{name}-branch")
        self.render_graph(
            step.branch, branch_template, f"{name}-", settings, inner_items, f"step {step.path}"
        )
        arguments = [*_pass_items(items), {"name": step.iterate_as, "value": "{{item}}"}]
        task: dict[str, Any] = {
            "name": "each",
            "template": branch_template,
            "arguments": {"parameters": arguments},
        }
        if step.iterate_on is not None:
            task["withParam"] = f"{{{{workflow.parameters.{step.iterate_on}}}}}"
        else:
            task["withItems"] = list(step.items or ())
        template["dag"] = {"failFast": False, "tasks": [task]}
        self.count(template, f"step {step.path}", f"{len(step.items or ())} items")

    def _dag_template(self, step: DagStep, name: str, settings: StepSettings, items: tuple[str, ...]) -> None:
        template: dict[str, Any] = {"name": name}
        self.templates.append(template)
        _add_inputs(template, items)
        tasks = []
        for inner in step.tasks.values():
            task = self._task(inner, f"{name}-", settings, items)
            if inner.depends:
                task["depends"] = " && ".join(
                    f"{task_name(dependency)}.Succeeded" for dependency in inner.depends
                )
            tasks.append(task)
        template["dag"] = {"tasks": tasks}
        self.count(template, f"step {step.path}", _graph_parts(len(tasks), items))


def _container_parts(settings: StepSettings, items: tuple[str, ...]) -> str:
    """What makes a step's template large, for the message of `_Renderer.count`."""
    secrets = len(settings.secrets_from_k8s)
    return f"{secrets} secret env vars (secrets_from_k8s), {len(items)} inputs from the maps around it"


def _graph_parts(tasks: int, items: tuple[str, ...]) -> str:
    return f"{tasks} tasks, each passing {len(items)} items of the maps around it"


def _walk_order(graph: Graph) -> list[Step]:
    """Steps from start_at outwards, following next before on_failure, so the output reads top to bottom."""
    order = [graph.start_at]
    for name in order:
        step = graph.steps[name]
        for target in (step.next, step.on_failure):
            if target and target not in order:
                order.append(target)
    return [graph.steps[name] for name in order]


def _incoming_edges(graph: Graph) -> dict[str, list[str]]:
    """For each step, the outcomes of other steps that lead to it, OR-ed into its ``depends``."""
    incoming: dict[str, list[str]] = {}
    for step in _walk_order(graph):
        source = task_name(step.name)
        if step.next:
            incoming.setdefault(step.next, []).append(f"{source}.Succeeded")
        if step.on_failure:
            incoming.setdefault(step.on_failure, []).extend([f"{source}.Failed", f"{source}.Errored"])
    return incoming


def _argv(step: TaskStep | TerminalStep) -> tuple[str, ...]:
    if isinstance(step, TaskStep):
        return step.command.argv
    if step.kind == "fail":
        return ("sh", "-c", f"echo 'pipeline reached fail step {step.path}' >&2; exit 1")
    return ("sh", "-c", f"echo 'pipeline reached success step {step.path}'")


def _retry_strategy(step: TaskStep) -> dict[str, Any]:
    assert step.retry is not None
    retry = step.retry
    strategy: dict[str, Any] = {"limit": str(retry.limit), "retryPolicy": retry.policy}
    if retry.backoff_duration is not None:
        backoff: dict[str, Any] = {"duration": retry.backoff_duration}
        if retry.backoff_factor is not None:
            backoff["factor"] = str(retry.backoff_factor)
        if retry.backoff_max_duration is not None:
            backoff["maxDuration"] = retry.backoff_max_duration
        strategy["backoff"] = backoff
    return strategy


def _add_inputs(template: dict[str, Any], items: tuple[str, ...]) -> None:
    """Steps inside maps receive every enclosing map's item as an input parameter."""
    if items:
        template["inputs"] = {"parameters": [{"name": item} for item in items]}


def _pass_items(items: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"name": item, "value": f"{{{{inputs.parameters.{item}}}}}"} for item in items]
