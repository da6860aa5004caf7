"""How many times each map step's branch runs, bounded before the Workflow is written.

A map's branch runs once per item, and once per item of every map around it too: five nested maps of a
hundred items are 10^10 pods from a 3 KB pipeline. Every map's items are known when transpiling (the
literal `items`, or the JSON list its `iterate_on` parameter holds: a default, a `--parameter`, a parameters
file), so each map's count, and the product with the maps around it, is checked against `map_items`; the
problem names the map step and its `items` or `iterate_on`. Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import limits

from .errors import Problems
from .model import DagStep, Graph, MapStep, ParallelStep, Pipeline, Step


def check_fanout(pipeline: Pipeline, given: Mapping[str, str], problems: Problems) -> None:
    """Add a problem for each map whose branch would run more than `map_items` times. `given` are the
    parameter values the caller set (JSON text for a list), which win over the pipeline's defaults."""
    _graph(pipeline.graph, (), _Lists(pipeline.parameters, given), problems)


class _Lists:
    """The length of each list parameter (None: not a list), each given value's JSON read once."""

    def __init__(self, defaults: Mapping[str, Any], given: Mapping[str, str]) -> None:
        self._defaults = defaults
        self._given = given
        self._lengths: dict[str, int | None] = {}

    def length(self, name: str) -> int | None:
        if name not in self._lengths:
            if name in self._given:
                self._lengths[name] = _list_length(self._given[name])
            else:
                default = self._defaults.get(name)
                self._lengths[name] = len(default) if isinstance(default, list) else None
        return self._lengths[name]

    def source(self, name: str) -> str:
        return "as given" if name in self._given else "its default"


def _list_length(text: str) -> int | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return len(value) if isinstance(value, list) else None


def _graph(graph: Graph, around: tuple[int, ...], lists: _Lists, problems: Problems) -> None:
    for step in graph.steps.values():
        _step(step, around, lists, problems)


def _step(step: Step, around: tuple[int, ...], lists: _Lists, problems: Problems) -> None:
    if isinstance(step, ParallelStep):
        for branch in step.branches.values():
            _graph(branch, around, lists, problems)
    elif isinstance(step, DagStep):
        for task in step.tasks.values():
            _step(task, around, lists, problems)
    elif isinstance(step, MapStep):
        count = _map_count(step, lists, problems)
        if count is None:
            return
        runs = (*around, count)
        if len(runs) > 1 and math.prod(runs) > limits.current().map_items:
            field_name = "items" if step.items is not None else "iterate_on"
            times = " x ".join(str(n) for n in runs)
            message = limits.too_many("items", math.prod(runs), "map_items")
            problems.add(
                f"step {step.path}",
                field_name,
                f"{message}: with the maps around it, its branch runs {times} times",
            )
            return
        _graph(step.branch, runs, lists, problems)


def _map_count(step: MapStep, lists: _Lists, problems: Problems) -> int | None:
    """The map's own item count (1 when its parameter holds no list: the maps inside are still checked);
    None, after a problem, when it is past the bound: nothing below it is walked."""
    bound = limits.current().map_items
    if step.items is not None:
        if len(step.items) > bound:
            problems.add(f"step {step.path}", "items", limits.too_many("items", len(step.items), "map_items"))
            return None
        return len(step.items)
    length = lists.length(step.iterate_on) if step.iterate_on is not None else None
    if length is None:
        return 1
    if length > bound:
        assert step.iterate_on is not None, "a length comes from a parameter"
        message = limits.too_many("items", length, "map_items")
        source = f"the list in parameter '{step.iterate_on}', {lists.source(step.iterate_on)}"
        problems.add(f"step {step.path}", "iterate_on", f"{message} ({source})")
        return None
    return length
