"""Read a pipeline definition into the checked model, collecting every problem with its step and field: the
document, its graphs and their flow, and each step's kind (a task's own fields are read by `tasks`)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import limits

from . import tasks
from .config import read_overrides
from .errors import Problems, unknown_key_message
from .graph import check_edges_exist, find_cycle, reachable_from
from .model import (
    STEP_TYPES,
    DagStep,
    Graph,
    MapStep,
    ParallelStep,
    Pipeline,
    Step,
    TerminalStep,
    iter_steps,
)

STEP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
PARAMETER_NAME = re.compile(r"^[A-Za-z_][-A-Za-z0-9_]{0,62}$")
PIPELINE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$")

# ``executor_config`` is the name Magnus's Argo documentation gives ``mode_config`` in its step example.
_OVERRIDE_KEYS = ("mode_config", "executor_config")
_COMMON_KEYS = ("type", "description", *_OVERRIDE_KEYS)
_FLOW_KEYS = ("next", "on_failure")
_KEYS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "task": ("command", "command_type", "retry"),
    "parallel": ("branches",),
    "map": ("branch", "iterate_on", "items", "iterate_as", "parallelism"),
    "dag": ("tasks",),
    "success": (),
    "fail": (),
}
_TOP_KEYS = ("name", "description", "parameters", "dag")
_GRAPH_KEYS = ("start_at", "steps", "description")


def task_name(step_name: str) -> str:
    """The Argo task name of a step: Argo names allow letters, digits and dashes; lowercase is safest."""
    return step_name.lower().replace("_", "-")


@dataclass(frozen=True)
class _Scope:
    """What a step can refer to: pipeline parameters and the items of the maps around it; and how many
    parallel, map and dag steps it is nested in."""

    parameters: Mapping[str, Any]
    items: tuple[str, ...] = ()
    depth: int = 0

    def inside(self, item: str | None = None) -> _Scope:
        """The scope of the steps nested in a parallel, map (with its `item`) or dag step."""
        items = self.items if item is None else (*self.items, item)
        return _Scope(self.parameters, items, self.depth + 1)


def max_nesting() -> int:
    """How deep parallel, map and dag steps may nest. Each level is at least two levels of the document
    (the step, then its `tasks` or `branch`), so YAML text within MAX_YAML_DEPTH never gets here; a document
    sent as a JSON object, which the YAML reader never sees, is held to the same bound (and the parser and
    renderer, which recurse once per level, to a depth Python can always follow)."""
    return limits.current().yaml_depth // 2


def _too_deep(scope: _Scope, where: str, field_name: str, problems: Problems) -> bool:
    if scope.depth < max_nesting():
        return False
    setting = limits.Limits.setting_name("yaml_depth")
    problems.add(
        where, field_name, f"nests parallel, map and dag steps more than {max_nesting()} deep ({setting} / 2)"
    )
    return True


def parse_pipeline(document: Any) -> Pipeline:
    """Check a pipeline definition; raises PipelineError listing every problem."""
    problems = Problems()
    pipeline = read_pipeline(document, problems)
    problems.raise_if_any()
    assert pipeline is not None  # read_pipeline only returns None after adding a problem
    return pipeline


def read_pipeline(
    document: Any, problems: Problems, given_parameters: Collection[str] = ()
) -> Pipeline | None:
    """Like parse_pipeline, but adds problems to a shared collector.

    ``given_parameters`` are the names set at run time (``--parameter``, a parameters file): as in Magnus,
    a pipeline need not declare them for its commands and maps to use them.
    """
    if not isinstance(document, Mapping):
        problems.add("pipeline", "", "must be a mapping with a 'dag' key")
        return None
    for key in document:
        if key not in _TOP_KEYS:
            problems.add("pipeline", str(key), unknown_key_message(str(key), _TOP_KEYS))
    name = document.get("name", "pipeline")
    if not isinstance(name, str) or not PIPELINE_NAME.match(name):
        problems.add("pipeline", "name", f"{name!r} must be a lowercase DNS label of at most 50 characters")
        name = "pipeline"
    description = document.get("description") or ""
    parameters = _read_parameters(document.get("parameters"), problems)
    dag = document.get("dag")
    if not isinstance(dag, Mapping):
        problems.add("pipeline", "dag", "is required: a mapping with start_at and steps")
        return None
    if not description and isinstance(dag.get("description"), str):
        description = dag["description"]
    scope = _Scope({**dict.fromkeys(given_parameters), **parameters})
    graph = _read_graph(dag, "pipeline", "dag.", "", scope, problems)
    if graph is None:
        return None
    _check_map_parameters(graph, parameters, problems)
    return Pipeline(name=name, description=str(description), parameters=parameters, graph=graph)


def _read_parameters(document: Any, problems: Problems) -> dict[str, Any]:
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        problems.add("pipeline", "parameters", "must be a mapping of name: default value")
        return {}
    parameters: dict[str, Any] = {}
    for name, value in document.items():
        if not isinstance(name, str) or not PARAMETER_NAME.match(name):
            problems.add(
                "pipeline", f"parameters.{name}", "is not a valid name (letters, digits, '-' and '_')"
            )
        elif value is not None and not isinstance(value, str | int | float | bool | list | dict):
            problems.add("pipeline", f"parameters.{name}", f"cannot hold a {type(value).__name__}")
        else:
            parameters[name] = value
    return parameters


def _read_graph(
    document: Any, where: str, field_prefix: str, path_prefix: str, scope: _Scope, problems: Problems
) -> Graph | None:
    if not isinstance(document, Mapping):
        problems.add(where, field_prefix.rstrip("."), "must be a mapping with start_at and steps")
        return None
    for key in document:
        if key not in _GRAPH_KEYS:
            problems.add(where, f"{field_prefix}{key}", unknown_key_message(str(key), _GRAPH_KEYS))
    raw_steps = document.get("steps")
    if not isinstance(raw_steps, Mapping) or not raw_steps:
        problems.add(where, f"{field_prefix}steps", "must be a non-empty mapping of step name: step")
        return None
    steps = _read_steps(raw_steps, path_prefix, scope, in_dag=False, problems=problems)
    start_at = document.get("start_at")
    if not isinstance(start_at, str) or start_at not in raw_steps:
        problems.add(where, f"{field_prefix}start_at", f"{start_at!r} is not one of the steps")
        return None
    if start_at in steps and isinstance(steps[start_at], TerminalStep):
        problems.add(
            where, f"{field_prefix}start_at", f"'{start_at}' is a terminal; start at a step that runs"
        )
    if len(steps) == len(raw_steps):
        _check_flow(steps, start_at, path_prefix, problems)
    return Graph(start_at=start_at, steps=steps)


def _check_flow(steps: dict[str, Step], start_at: str, path_prefix: str, problems: Problems) -> None:
    def edges(name: str) -> list[tuple[str, str]]:
        step = steps[name]
        return [
            (field, target)
            for field, target in (("next", step.next), ("on_failure", step.on_failure))
            if target
        ]

    def describe(name: str) -> str:
        return f"step {path_prefix}{name}"

    check_edges_exist(steps, edges, describe, problems)
    reachable = set(reachable_from(start_at, steps, edges))
    for name in steps:
        if name in reachable:
            continue
        step = steps[name]
        if isinstance(step, TerminalStep) and step.kind == "fail":
            # Magnus pipelines declare a `fail` step by habit, reached only by an on_failure they may not
            # have; nothing runs it, so it is left out of the Workflow.
            problems.warn(f"{describe(name)}: no step leads to this fail step; it is left out")
        else:
            problems.add(describe(name), "", f"is not reachable from start_at '{start_at}'")
    cycle = find_cycle(steps, edges)
    if cycle:
        loop, field_name = cycle
        problems.add(describe(loop[-2]), field_name, f"makes a cycle: {' -> '.join(loop)}")


def _read_steps(
    raw_steps: Mapping[Any, Any], path_prefix: str, scope: _Scope, *, in_dag: bool, problems: Problems
) -> dict[str, Step]:
    """The steps of a graph or of a dag step, by name (those that could not be read are left out, their
    problems added); then their names are checked for clashing as Argo task names."""
    steps: dict[str, Step] = {}
    for name, raw in raw_steps.items():
        step = _read_named_step(name, raw, path_prefix, scope, in_dag=in_dag, problems=problems)
        if step is not None:
            steps[step.name] = step
    _check_task_name_clashes(list(raw_steps), path_prefix, problems)
    return steps


def _check_task_name_clashes(names: list[Any], path_prefix: str, problems: Problems) -> None:
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str):
            continue
        task = task_name(name)
        if task in seen:
            problems.add(
                f"step {path_prefix}{name}", "", f"clashes with step '{seen[task]}' as Argo task '{task}'"
            )
        seen.setdefault(task, name)


def _read_named_step(
    name: Any, raw: Any, path_prefix: str, scope: _Scope, *, in_dag: bool, problems: Problems
) -> Step | None:
    where = f"step {path_prefix}{name}"
    if not isinstance(name, str) or not STEP_NAME.match(name):
        problems.add(
            where, "", "the name must start with a letter and use letters, digits, '-' or '_' (max 63)"
        )
        return None
    if not isinstance(raw, Mapping):
        problems.add(where, "", "must be a mapping with a type")
        return None
    step_type = raw.get("type", "task" if in_dag else None)
    if step_type not in STEP_TYPES or (in_dag and step_type in ("success", "fail")):
        allowed = [kind for kind in STEP_TYPES if not (in_dag and kind in ("success", "fail"))]
        problems.add(where, "type", f"{step_type!r} must be one of {', '.join(allowed)}")
        return None
    terminal = step_type in ("success", "fail")
    flow_keys: tuple[str, ...] = ("depends",) if in_dag else () if terminal else _FLOW_KEYS
    known = (*_COMMON_KEYS, *flow_keys, *_KEYS_BY_TYPE[step_type])
    for key in raw:
        if key not in known:
            message = unknown_key_message(str(key), known)
            if key in _FLOW_KEYS and in_dag:
                message = "steps inside a dag use depends, not next or on_failure"
            elif key in _FLOW_KEYS:
                message = "terminal steps end the pipeline; they take no next or on_failure"
            problems.add(where, str(key), message)
    path = f"{path_prefix}{name}"
    if all(key in raw for key in _OVERRIDE_KEYS):
        problems.add(where, "executor_config", "is another name for mode_config; keep one of them")
    override_key = "executor_config" if "executor_config" in raw else "mode_config"
    common: dict[str, Any] = {
        "name": name,
        "path": path,
        "overrides": read_overrides(raw.get(override_key), where, problems, field_name=override_key),
    }
    if in_dag:
        common["depends"] = _read_depends(raw.get("depends"), where, problems)
    elif not terminal:
        common["next"] = _read_target(raw, "next", where, problems, required=True)
        common["on_failure"] = _read_target(raw, "on_failure", where, problems, required=False)
    if raw.get("description") is not None and not isinstance(raw.get("description"), str):
        problems.add(where, "description", "must be text")
    reader = _READERS[step_type]
    return reader(raw, common, where, scope, problems)


def _read_target(
    raw: Mapping[str, Any], key: str, where: str, problems: Problems, *, required: bool
) -> str | None:
    value = raw.get(key)
    if value is None:
        if required:
            problems.add(where, key, "is required: the step to run afterwards (or a success/fail step)")
        return None
    if not isinstance(value, str):
        problems.add(where, key, f"{value!r} must be a step name")
        return None
    return value


def _read_depends(value: Any, where: str, problems: Problems) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.add(where, "depends", "must be a list of step names of the same dag")
        return ()
    return tuple(dict.fromkeys(value))


def _read_task(
    raw: Mapping[str, Any], common: dict[str, Any], where: str, scope: _Scope, problems: Problems
) -> Step:
    return tasks.read_task(raw, common, where, scope.parameters, scope.items, problems)


def _read_parallel(
    raw: Mapping[str, Any], common: dict[str, Any], where: str, scope: _Scope, problems: Problems
) -> Step:
    branches_doc = _nested(raw, "branches", "branch name: {start_at, steps}", where, scope, problems)
    branches: dict[str, Graph] = {}
    for branch_name, branch_doc in branches_doc.items():
        if not isinstance(branch_name, str) or not STEP_NAME.match(branch_name):
            problems.add(where, f"branches.{branch_name}", "is not a valid branch name")
            continue
        graph = _read_graph(
            branch_doc,
            where,
            f"branches.{branch_name}.",
            f"{common['path']}.{branch_name}.",
            scope.inside(),
            problems,
        )
        if graph is not None:
            branches[branch_name] = graph
    _check_task_name_clashes(list(branches_doc), f"{common['path']}.", problems)
    return ParallelStep(**common, branches=branches)


def _nested(
    raw: Mapping[str, Any], field_name: str, entries: str, where: str, scope: _Scope, problems: Problems
) -> Mapping[Any, Any]:
    """What a parallel or dag step nests under `field_name`: a non-empty mapping (of `entries`, as the
    problem words it), or an empty one, with the problem added, when it is not one or nests too deep."""
    if _too_deep(scope, where, field_name, problems):
        return {}
    nested = raw.get(field_name)
    if not isinstance(nested, Mapping) or not nested:
        problems.add(where, field_name, f"must be a non-empty mapping of {entries}")
        return {}
    return nested


def _read_map(
    raw: Mapping[str, Any], common: dict[str, Any], where: str, scope: _Scope, problems: Problems
) -> Step:
    iterate_as = raw.get("iterate_as", "item")
    if not isinstance(iterate_as, str) or not PARAMETER_NAME.match(iterate_as):
        problems.add(
            where, "iterate_as", f"{iterate_as!r} is not a valid name (letters, digits, '-' and '_')"
        )
        iterate_as = "item"
    elif iterate_as in scope.items:
        problems.add(where, "iterate_as", f"'{iterate_as}' is already the item of an enclosing map")
    iterate_on, items = raw.get("iterate_on"), raw.get("items")
    if (iterate_on is None) == (items is None):
        problems.add(
            where, "iterate_on", "set exactly one of iterate_on (a list parameter) or items (a list)"
        )
    if iterate_on is not None and (not isinstance(iterate_on, str) or iterate_on not in scope.parameters):
        problems.add(where, "iterate_on", f"{iterate_on!r} is not a pipeline parameter")
        iterate_on = None
    if items is not None and (not isinstance(items, list) or not items):
        problems.add(where, "items", "must be a non-empty list")
        items = None
    parallelism = raw.get("parallelism")
    if parallelism is not None and (
        not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1
    ):
        problems.add(where, "parallelism", f"{parallelism!r} must be a whole number, 1 or more")
        parallelism = None
    branch = None
    if not _too_deep(scope, where, "branch", problems):
        inner = scope.inside(iterate_as)
        branch = _read_graph(raw.get("branch"), where, "branch.", f"{common['path']}.", inner, problems)
    return MapStep(
        **common,
        branch=branch or Graph(start_at="", steps={}),
        iterate_on=iterate_on,
        items=tuple(items) if items is not None else None,
        iterate_as=iterate_as,
        parallelism=parallelism,
    )


def _read_dag(
    raw: Mapping[str, Any], common: dict[str, Any], where: str, scope: _Scope, problems: Problems
) -> Step:
    tasks_doc = _nested(raw, "tasks", "name: step (with depends)", where, scope, problems)
    tasks = _read_steps(tasks_doc, f"{common['path']}.", scope.inside(), in_dag=True, problems=problems)

    def edges(name: str) -> list[tuple[str, str]]:
        return [("depends", dependency) for dependency in tasks[name].depends]

    def describe(name: str) -> str:
        return f"step {common['path']}.{name}"

    check_edges_exist(tasks, edges, describe, problems)
    cycle = find_cycle(tasks, edges)
    if cycle:
        loop, field_name = cycle
        problems.add(describe(loop[-2]), field_name, f"makes a cycle: {' -> '.join(loop)}")
    return DagStep(**common, tasks=tasks)


def _read_terminal(
    raw: Mapping[str, Any], common: dict[str, Any], where: str, scope: _Scope, problems: Problems
) -> Step:
    return TerminalStep(**common, kind="fail" if raw.get("type") == "fail" else "success")


_READERS = {
    "task": _read_task,
    "parallel": _read_parallel,
    "map": _read_map,
    "dag": _read_dag,
    "success": _read_terminal,
    "fail": _read_terminal,
}


def _check_map_parameters(graph: Graph, parameters: Mapping[str, Any], problems: Problems) -> None:
    """A parameter a map iterates on must hold a list (or be left for the caller to set)."""
    for step in iter_steps(graph):
        if isinstance(step, MapStep) and step.iterate_on is not None:
            value = parameters.get(step.iterate_on)
            if value is not None and not isinstance(value, list):
                problems.add(
                    f"step {step.path}", "iterate_on", f"parameter '{step.iterate_on}' is not a list"
                )


__all__ = ["PARAMETER_NAME", "parse_pipeline", "read_pipeline", "task_name"]
