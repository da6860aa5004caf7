"""The checked pipeline definition: a graph of steps, ready to render (no raw YAML, no unchecked values)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Retry:
    """Argo's ``retryStrategy`` for a task: how often, on which failures, how long to wait between tries."""

    limit: int
    policy: str = "OnFailure"
    backoff_duration: str | None = None
    backoff_factor: int | None = None
    backoff_max_duration: str | None = None


@dataclass(frozen=True)
class Step:
    """What every step has. ``path`` names it in messages (``train.xgb.fit`` for a step inside a branch)."""

    name: str
    path: str
    overrides: dict[str, Any] = field(default_factory=dict)
    next: str | None = None
    on_failure: str | None = None
    depends: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    """A command in Argo's form, with the parameters and map items it reads (they key the cache)."""

    argv: tuple[str, ...]
    parameters: tuple[str, ...] = ()
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskStep(Step):
    command: Command = Command(argv=())
    retry: Retry | None = None


@dataclass(frozen=True)
class Graph:
    """A (sub-)pipeline: where it starts and its steps by name, in the order they were written."""

    start_at: str
    steps: dict[str, Step]


@dataclass(frozen=True)
class ParallelStep(Step):
    branches: dict[str, Graph] = field(default_factory=dict)


@dataclass(frozen=True)
class MapStep(Step):
    """Runs ``branch`` once per item: of the list parameter ``iterate_on``, or of the literal ``items``."""

    branch: Graph = Graph(start_at="", steps={})
    iterate_on: str | None = None
    items: tuple[Any, ...] | None = None
    iterate_as: str = "item"
    parallelism: int | None = None


@dataclass(frozen=True)
class DagStep(Step):
    """Steps joined by explicit ``depends`` lists instead of ``next``."""

    tasks: dict[str, Step] = field(default_factory=dict)


@dataclass(frozen=True)
class TerminalStep(Step):
    kind: Literal["success", "fail"] = "success"


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    parameters: dict[str, Any]
    graph: Graph


STEP_TYPES = ("task", "parallel", "map", "dag", "success", "fail")


def iter_steps(graph: Graph) -> list[Step]:
    """Every step of a graph and of the graphs nested in it, outer steps first."""
    found: list[Step] = []
    for step in graph.steps.values():
        found.append(step)
        found.extend(_nested_steps(step))
    return found


def _nested_steps(step: Step) -> list[Step]:
    if isinstance(step, ParallelStep):
        return [inner for branch in step.branches.values() for inner in iter_steps(branch)]
    if isinstance(step, MapStep):
        return iter_steps(step.branch)
    if isinstance(step, DagStep):
        found: list[Step] = []
        for task in step.tasks.values():
            found.append(task)
            found.extend(_nested_steps(task))
        return found
    return []
