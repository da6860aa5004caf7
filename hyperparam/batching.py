"""How many trials one generated Workflow carries, so the object stays well under Kubernetes' ~1 MiB.

A Workflow grows after creation: Argo writes one `status.nodes` entry per node it runs, and the apiserver
records the fields it wrote in `metadata.managedFields`. So a batch is sized from the spec we render plus a
conservative estimate of that status, per trial, from a static walk of the user's templates:

    per node    NODE_FIXED_BYTES (ids, type, phase, times, progress, resourcesDuration, exit code, the
                main-logs artifact, hostNodeName, taskResultsCompletionStatus)
              + MESSAGE_BYTES (a failure message)
              + MANAGED_FIELDS_BYTES (the node's keys listed again in managedFields)
              + 4 x the node's full name (name, displayName, id and the parent's children list)
              + the template's declared inputs and outputs, each parameter with VALUE_BYTES for its value
    per trial   every node the entrypoint creates: steps and step groups, DAG tasks and task groups,
                containerSet containers, retry attempts (limit + 1; ASSUMED_RETRIES when not a number),
                withItems/withSequence counts (ASSUMED_FANOUT for withParam), onExit and hooks
    per batch   the spec counted twice (Argo may keep a copy of templates in status) + STATUS_FIXED_BYTES

The sum must fit BATCH_BUDGET_BYTES, 640 KiB: the estimate itself is generous (a real pod node is ~1 KiB),
and the remaining margin to 1 MiB absorbs what a static walk cannot see (large output values, recursion).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperparam.space.counts import HUGE

OBJECT_LIMIT_BYTES = 1024 * 1024
BATCH_BUDGET_BYTES = 640 * 1024
# Argo's controller slows down on workflows with many thousands of nodes; keep batches modest even when
# the bytes would allow more.
MAX_TRIALS_PER_BATCH = 1000

NODE_FIXED_BYTES = 1024
MESSAGE_BYTES = 512
MANAGED_FIELDS_BYTES = 768
NAME_COPIES = 4
VALUE_BYTES = 128
OUTPUT_ARTIFACT_BYTES = 256
STATUS_FIXED_BYTES = 16 * 1024
ASSUMED_RETRIES = 5
ASSUMED_FANOUT = 16
MAX_TEMPLATE_DEPTH = 12

# Strings of more digits than this are read as HUGE + 1 (`as_int`).
_INT_DIGITS = 100

_LEAF_TYPES = ("container", "script", "resource", "data", "http", "plugin", "suspend")
_Template = Mapping[str, Any]


def json_size(value: object) -> int:
    """Bytes of `value` as compact JSON, which is how the apiserver stores custom resources."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass(frozen=True)
class BatchPlan:
    """The split of a sweep's trials into Workflows, and how many of them may run at once.

    Batches run one after another in index order, `concurrent_batches` at a time; each Workflow gets
    `workflow_parallelism`, so the trials running across all active batches never exceed the sweep's
    parallelism.
    """

    trial_count: int
    trials_per_batch: int
    parallelism: int

    @property
    def batch_count(self) -> int:
        return math.ceil(self.trial_count / self.trials_per_batch)

    @property
    def concurrent_batches(self) -> int:
        wanted = math.ceil(self.parallelism / self.trials_per_batch)
        return max(1, min(wanted, self.batch_count))

    @property
    def workflow_parallelism(self) -> int:
        return max(1, min(self.parallelism // self.concurrent_batches, self.trials_per_batch))

    def batch_trials(self, batch_index: int) -> range:
        """The trial indices of batch `batch_index`."""
        if not 0 <= batch_index < self.batch_count:
            raise IndexError(f"batch {batch_index} outside the plan's {self.batch_count} batches")
        start = batch_index * self.trials_per_batch
        return range(start, min(start + self.trials_per_batch, self.trial_count))

    def batch_of(self, trial_index: int) -> int:
        return trial_index // self.trials_per_batch

    def batches_to_create(self, existing: set[int], finished: set[int]) -> list[int]:
        """The next batch indices to create, given which exist and which of those are finished."""
        free = self.concurrent_batches - len(existing - finished)
        if free <= 0:
            return []
        missing = (index for index in range(self.batch_count) if index not in existing)
        return [index for _, index in zip(range(free), missing, strict=False)]


def trials_per_batch(base_spec_bytes: int, item_bytes: int, trial_status_bytes: int) -> int:
    """How many trials fit the budget; 0 means not even one does."""
    room = BATCH_BUDGET_BYTES - 2 * base_spec_bytes - STATUS_FIXED_BYTES
    per_trial = 2 * item_bytes + trial_status_bytes
    return max(0, min(room // per_trial, MAX_TRIALS_PER_BATCH))


def workflow_status_bytes(workflow_spec: _Template, workflow_name_length: int) -> int:
    """Estimated status of a batch before any trial: our fan-out nodes and the workflow's exit handlers.

    Past BATCH_BUDGET_BYTES the walk stops and answers the figure reached, a number above the budget."""
    walk = _Walk(_templates_by_name(workflow_spec), BATCH_BUDGET_BYTES)
    total = STATUS_FIXED_BYTES
    for hook in _exit_hooks(workflow_spec):
        total += walk.invocation(hook, workflow_name_length + 16, (), 0)
        if total > walk.cap:
            break
    return total


def trial_status_bytes(workflow_spec: _Template, entrypoint: str, trial_node_name_length: int) -> int:
    """Estimated `status.nodes` bytes of one trial: every node one run of the entrypoint creates.

    Past BATCH_BUDGET_BYTES the walk stops and answers the figure reached, a number above the budget: a
    trial that large fits no Workflow, and templates that call each other ten times a level, twelve levels
    deep, are 10^12 paths to walk but a few kilobytes of spec."""
    walk = _Walk(_templates_by_name(workflow_spec), BATCH_BUDGET_BYTES)
    return walk.invocation(entrypoint, trial_node_name_length, (), 0)


@dataclass(frozen=True)
class _Walk:
    """The static walk of a trial's templates, stopped as soon as its running total passes `cap`.

    Why it stays cheap: every invocation adds at least one node (over 2 KiB) to the total it returns, and a
    caller adds what a callee returned at least once (a loop of no items is not walked), so the walk makes
    at most `cap` / 2 KiB invocations before it stops, however the templates call each other."""

    templates: Mapping[str, _Template]
    cap: int

    def invocation(self, name: str | None, name_length: int, stack: tuple[str, ...], depth: int) -> int:
        template = self.templates.get(name) if name else None
        if template is None or name in stack or depth > MAX_TEMPLATE_DEPTH:
            # A templateRef, a missing template or recursion: one node with generous inputs and outputs.
            return _node_bytes(name_length, {}) + 4 * VALUE_BYTES
        assert name is not None
        retry = template.get("retryStrategy")
        if isinstance(retry, Mapping):
            attempts = _retry_attempts(retry)
            attempt = self._single_run(template, name_length + 4, (*stack, name), depth)
            return _node_bytes(name_length, template) + attempts * attempt
        return self._single_run(template, name_length, (*stack, name), depth)

    def _single_run(self, template: _Template, name_length: int, stack: tuple[str, ...], depth: int) -> int:
        own = _node_bytes(name_length, template)
        if isinstance(template.get("steps"), list):
            return own + self._steps(template["steps"], name_length, stack, depth)
        if isinstance(template.get("dag"), Mapping):
            return own + self._dag(template["dag"], name_length, stack, depth)
        container_set = template.get("containerSet")
        if isinstance(container_set, Mapping):
            containers = container_set.get("containers")
            count = len(containers) if isinstance(containers, list) else 1
            return own + count * _node_bytes(name_length + 64, {})
        return own

    def _steps(self, groups: list[Any], name_length: int, stack: tuple[str, ...], depth: int) -> int:
        total = 0
        for group in groups:
            group_name_length = name_length + 6
            total += _node_bytes(group_name_length, {})
            for step in group if isinstance(group, list) else []:
                if isinstance(step, Mapping):
                    total += self._call(step, group_name_length + 1, stack, depth)
                if total > self.cap:
                    return total
        return total

    def _dag(self, dag: Mapping[str, Any], name_length: int, stack: tuple[str, ...], depth: int) -> int:
        total = 0
        tasks = dag.get("tasks")
        for task in tasks if isinstance(tasks, list) else []:
            if isinstance(task, Mapping):
                total += self._call(task, name_length + 1, stack, depth)
            if total > self.cap:
                return total
        return total

    def _call(self, call: Mapping[str, Any], prefix_length: int, stack: tuple[str, ...], depth: int) -> int:
        """A step or DAG task: its template once per item (plus a group node when it fans out) and its
        hooks. A loop of no items runs nothing, so nothing under it is walked."""
        call_name_length = prefix_length + len(str(call.get("name", "")))
        fanout, item_length = _fanout(call)
        target = call.get("template") if isinstance(call.get("template"), str) else None
        total = 0
        if fanout is None:
            total += self.invocation(target, call_name_length, stack, depth + 1)
        else:
            total += _node_bytes(call_name_length, {})
            child_length = call_name_length + 8 + item_length
            if fanout:
                total += fanout * self.invocation(target, child_length, stack, depth + 1)
        runs = 1 if fanout is None else fanout
        for hook in _exit_hooks(call) if runs else []:
            if total > self.cap:
                break
            total += runs * self.invocation(hook, call_name_length + 16, stack, depth + 1)
        return total


def _fanout(call: Mapping[str, Any]) -> tuple[int | None, int]:
    """(how many items, the longest item's JSON length), or (None, 0) for a call that does not loop."""
    items = call.get("withItems")
    if isinstance(items, list):
        return len(items), max((json_size(item) for item in items), default=0)
    if "withParam" in call:
        return ASSUMED_FANOUT, VALUE_BYTES
    sequence = call.get("withSequence")
    if isinstance(sequence, Mapping):
        return _sequence_length(sequence), 12
    return None, 0


def _sequence_length(sequence: Mapping[str, Any]) -> int:
    length = literal_sequence_length(sequence)
    return ASSUMED_FANOUT if length is None else length


def literal_sequence_length(sequence: Mapping[str, Any]) -> int | None:
    """How many numbers a `withSequence` yields, or None when its count or end is an expression."""
    count = as_int(sequence.get("count"))
    if count is not None:
        return max(count, 0)
    start, end = as_int(sequence.get("start", 0)), as_int(sequence.get("end"))
    if start is not None and end is not None:
        return abs(end - start) + 1
    return None


def _retry_attempts(retry: Mapping[str, Any]) -> int:
    limit = as_int(retry.get("limit"))
    return (ASSUMED_RETRIES if limit is None else max(limit, 0)) + 1


def _exit_hooks(holder: Mapping[str, Any]) -> list[str | None]:
    hooks: list[str | None] = []
    if isinstance(holder.get("onExit"), str):
        hooks.append(holder["onExit"])
    if isinstance(holder.get("hooks"), Mapping):
        for hook in holder["hooks"].values():
            template = hook.get("template") if isinstance(hook, Mapping) else None
            hooks.append(template if isinstance(template, str) else None)
    return hooks


def _node_bytes(name_length: int, template: _Template) -> int:
    return (
        NODE_FIXED_BYTES
        + MESSAGE_BYTES
        + MANAGED_FIELDS_BYTES
        + NAME_COPIES * name_length
        + _io_bytes(template)
    )


def _io_bytes(template: _Template) -> int:
    total = 0
    for side in ("inputs", "outputs"):
        block = template.get(side)
        if not isinstance(block, Mapping):
            continue
        parameters = block.get("parameters")
        artifacts = block.get("artifacts")
        if isinstance(parameters, list):
            total += sum(json_size(parameter) + VALUE_BYTES for parameter in parameters)
        if isinstance(artifacts, list):
            total += sum(json_size(artifact) + OUTPUT_ARTIFACT_BYTES for artifact in artifacts)
    return total


def _templates_by_name(workflow_spec: _Template) -> dict[str, _Template]:
    templates = workflow_spec.get("templates")
    return {
        template["name"]: template
        for template in (templates if isinstance(templates, list) else [])
        if isinstance(template, Mapping) and isinstance(template.get("name"), str)
    }


def as_int(value: object) -> int | None:
    """An integer as Argo reads one (a number, or a string of digits), or None. A string of more than 100
    digits is taken as HUGE + 1: its exact value would only make every sum after it a longer number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        digits = value.strip()
        negative = digits.startswith("-")
        digits = digits.removeprefix("-")
        if digits.isascii() and digits.isdigit():
            number = int(digits) if len(digits) <= _INT_DIGITS else HUGE + 1
            return -number if negative else number
    return None
