"""Checks on each step's merged settings (configuration defaults + cascaded ``mode_config`` overrides).

This walks the nested steps rather than the ``next`` edges, so it still runs when the graph itself is broken
and its problems are reported together with the graph's.
"""

from __future__ import annotations

from collections.abc import Iterator

from .config import WRAPPER_KEYS, ExecutorConfig, StepSettings, apply_overrides, settings_problems
from .errors import Problems
from .model import DagStep, Graph, MapStep, ParallelStep, Pipeline, Step, TaskStep, TerminalStep


def check_settings(pipeline: Pipeline, config: ExecutorConfig, problems: Problems) -> None:
    """Every step that runs a container needs an image and requests within its limits."""
    defaults_problems = set(settings_problems(config.defaults))
    without_image: list[str] = []
    container_steps = 0
    for step, settings in container_settings(pipeline.graph, config.defaults):
        container_steps += 1
        if not settings.docker_image:
            without_image.append(step.path)
        for field_name, message in settings_problems(settings):
            if (field_name, message) not in defaults_problems:
                problems.add(f"step {step.path}", field_name, message)
    unreadable = ("", "docker_image", *WRAPPER_KEYS, *(f"{key}.config" for key in WRAPPER_KEYS))
    if any(problems.has("config", field_name) for field_name in unreadable):
        return  # the configuration's own problem is the one to fix first
    if without_image and len(without_image) == container_steps:
        problems.add("config", "docker_image", "is required (no step sets one under mode_config.argo)")
    else:
        for path in without_image:
            problems.add(f"step {path}", "docker_image", "no image: set docker_image in the configuration")


def container_settings(graph: Graph, parent: StepSettings) -> Iterator[tuple[Step, StepSettings]]:
    """(step, merged settings) for every task and terminal, nested ones included, in written order."""
    for step in graph.steps.values():
        yield from _step_settings(step, parent)


def _step_settings(step: Step, parent: StepSettings) -> Iterator[tuple[Step, StepSettings]]:
    settings = apply_overrides(parent, step.overrides)
    if isinstance(step, TaskStep | TerminalStep):
        yield step, settings
    elif isinstance(step, ParallelStep):
        for branch in step.branches.values():
            yield from container_settings(branch, settings)
    elif isinstance(step, MapStep):
        yield from container_settings(step.branch, settings)
    elif isinstance(step, DagStep):
        for task in step.tasks.values():
            yield from _step_settings(task, settings)
