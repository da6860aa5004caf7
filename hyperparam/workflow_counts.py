"""The counts in a sweep's embedded Argo workflow that multiply what each trial runs: the items of its loops
(`withItems`, `withSequence`) and its `parallelism`.

A trial runs the user's entrypoint as written, so a step looping `withSequence: {count: "1000000000000"}`
asks Argo for that many pods in every trial; the batch estimate (`batching`) would only find that one trial
fits no Workflow. Here each such count is refused where it is written, in `limits`' words: a loop's items by
`map_items` (the bound on the items one step fans out to, as for a pipeline's `map`), a `parallelism` by
`parallel_trials` (pods at once). Counts that are expressions (`{{inputs.parameters.n}}`, `withParam`) are
Argo's to resolve at run time and are not checked. Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import limits
from fields import FieldError
from hyperparam.batching import as_int, literal_sequence_length
from hyperparam.space.counts import too_many


def problems(workflow: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every loop and parallelism of `workflow` (a WorkflowSpec at `path`) past its bound."""
    found = _parallelism(workflow, path)
    templates = workflow.get("templates")
    for position, template in enumerate(templates if isinstance(templates, list) else []):
        if not isinstance(template, Mapping):
            continue
        template_path = f"{path}.templates[{position}]"
        found += _parallelism(template, template_path)
        for call_path, call in _calls(template, template_path):
            found += _loop(call, call_path)
    return found


def _calls(template: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each step of a steps template and each task of a DAG template, with its path."""
    steps = template.get("steps")
    for group_position, group in enumerate(steps if isinstance(steps, list) else []):
        for step_position, step in enumerate(group if isinstance(group, list) else []):
            if isinstance(step, Mapping):
                yield f"{path}.steps[{group_position}][{step_position}]", step
    dag = template.get("dag")
    tasks = dag.get("tasks") if isinstance(dag, Mapping) else None
    for task_position, task in enumerate(tasks if isinstance(tasks, list) else []):
        if isinstance(task, Mapping):
            yield f"{path}.dag.tasks[{task_position}]", task


def _loop(call: Mapping[str, Any], path: str) -> list[FieldError]:
    items = call.get("withItems")
    if isinstance(items, list):
        return _bounded(len(items), f"{path}.withItems")
    sequence = call.get("withSequence")
    if not isinstance(sequence, Mapping):
        return []
    length = literal_sequence_length(sequence)
    if length is None:
        return []
    field = "count" if as_int(sequence.get("count")) is not None else "end"
    return _bounded(length, f"{path}.withSequence.{field}")


def _bounded(items: int, path: str) -> list[FieldError]:
    if items <= limits.current().map_items:
        return []
    return [FieldError(path, too_many("items", items, "map_items"))]


def _parallelism(holder: Mapping[str, Any], path: str) -> list[FieldError]:
    parallelism = as_int(holder.get("parallelism"))
    if parallelism is None or parallelism <= limits.current().parallel_trials:
        return []
    return [FieldError(f"{path}.parallelism", too_many("pods at once", parallelism, "parallel_trials"))]
