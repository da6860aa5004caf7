"""Pure readers: a generated Workflow (spec + status) → one result per trial, and a sweep's counts and best.

Trials are found structurally, not by guessing from names: the fan-out step's items (in the Workflow's own
spec) give each position's trial index and parameters, and the children of the step-group node `<wf>[0]`
are the trial nodes, whose display names start `trial(<position>:`. Every item yields a result, started or
not, so the mirror has one row per combination from the moment a batch is created.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hyperparam.manifests import TRIAL_STEP
from hyperparam.sweep import TRIAL_KEY, Objective, Sweep
from kube.times import parse_time

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
ERROR = "Error"
METRICS_UNAVAILABLE = "MetricsUnavailable"
PHASES = (PENDING, RUNNING, SUCCEEDED, FAILED, ERROR, METRICS_UNAVAILABLE)
FAILED_PHASES = frozenset({FAILED, ERROR, METRICS_UNAVAILABLE})
FINISHED_PHASES = FAILED_PHASES | {SUCCEEDED}

_WORKFLOW_DONE = frozenset({"Succeeded", "Failed", "Error"})
_NODE_PHASES = {"Pending": PENDING, "Running": RUNNING, "Failed": FAILED, "Error": ERROR}
_POSITION = re.compile(rf"^{TRIAL_STEP}\((\d+):")


@dataclass(frozen=True)
class TrialResult:
    index: int
    params: dict[str, str]
    phase: str
    started_at: datetime | None = None
    finished_at: datetime | None = None
    metric: float | None = None
    message: str = ""
    workflow: str = ""
    node_id: str | None = None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES


def read_trials(workflow: Mapping[str, Any], metric: str | None) -> list[TrialResult]:
    """One result per trial of a generated Workflow, in item order; `metric` names the output parameter
    (None for a sweep without an objective: a trial then succeeds or fails by its node's phase alone)."""
    name = str(workflow.get("metadata", {}).get("name", ""))
    items = fanout_items(workflow)
    status = workflow.get("status") or {}
    nodes: Mapping[str, Any] = status.get("nodes") or {}
    by_position = _trial_nodes(nodes, name)
    workflow_phase = status.get("phase")
    results = []
    for position, item in enumerate(items):
        index = int(item[TRIAL_KEY])
        params = {key: value for key, value in item.items() if key != TRIAL_KEY}
        node = by_position.get(position)
        result = _from_node(index, params, node, metric, name)
        if workflow_phase in _WORKFLOW_DONE and not result.finished:
            message = status.get("message") or ""
            message = f"never finished: the workflow ended {workflow_phase}. {message}".strip()
            result = replace(result, phase=FAILED, metric=None, message=message)
        results.append(result)
    return results


def fanout_items(workflow: Mapping[str, Any]) -> list[dict[str, str]]:
    """The items of the fan-out step, found through the Workflow's entrypoint (our template)."""
    spec = workflow.get("spec") or {}
    entrypoint = spec.get("entrypoint")
    for template in spec.get("templates") or []:
        if isinstance(template, Mapping) and template.get("name") == entrypoint:
            steps = template.get("steps") or [[{}]]
            return list(steps[0][0].get("withItems") or [])
    raise ValueError(f"workflow {workflow.get('metadata', {}).get('name')!r} has no entrypoint template")


@dataclass(frozen=True)
class TrialSummary:
    """Counts by phase (every phase present, zeros included) and the best trial so far."""

    counts: dict[str, int]
    best: TrialResult | None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> int:
        return sum(self.counts[phase] for phase in FAILED_PHASES)

    @property
    def finished(self) -> int:
        return self.failed + self.counts[SUCCEEDED]


def summarize(trials: Iterable[TrialResult], objective: Objective | None) -> TrialSummary:
    """One pass over any number of trials; ties for best go to the lowest trial index (deterministic).
    Without an objective nothing is best."""
    counts = dict.fromkeys(PHASES, 0)
    best: TrialResult | None = None
    for trial in trials:
        counts[trial.phase] += 1
        if objective is None or trial.phase != SUCCEEDED or trial.metric is None:
            continue
        if (
            best is None
            or best.metric is None
            or _ranks_before(trial, trial.metric, best, best.metric, objective)
        ):
            best = trial
    return TrialSummary(counts, best)


def _ranks_before(
    trial: TrialResult, metric: float, incumbent: TrialResult, incumbent_metric: float, objective: Objective
) -> bool:
    if metric == incumbent_metric:
        return trial.index < incumbent.index
    return objective.better(metric, incumbent_metric)


STOP_TARGET_REACHED = "TargetReached"
STOP_TOO_MANY_FAILURES = "MaxFailedTrialsExceeded"


def stop_reason(summary: TrialSummary, sweep: Sweep) -> str | None:
    """Why the sweep must start no more trials, or None: the objective's target, or too many failures."""
    best = summary.best
    objective = sweep.objective
    if (
        best is not None
        and best.metric is not None
        and objective is not None
        and objective.reached(best.metric)
    ):
        return STOP_TARGET_REACHED
    if too_many_failures(summary.failed, sweep.max_failed_trials, every_trial_ran=False):
        return STOP_TOO_MANY_FAILURES
    return None


def too_many_failures(failed: int, max_failed_trials: int | None, *, every_trial_ran: bool) -> bool:
    """The one "too many failed trials" rule: more failed than `maxFailedTrials` tolerates. Unset, it
    tolerates any number while trials run (nothing stops a sweep early) and none once every trial ran (a
    sweep without an objective then fails if any trial failed), as docs/hyperparam.md promises. The stop
    (`stop_reason`) and the final verdict (`status`) both ask here, so they cannot drift apart."""
    if max_failed_trials is None:
        return every_trial_ran and failed > 0
    return failed > max_failed_trials


def _trial_nodes(nodes: Mapping[str, Any], workflow_name: str) -> dict[int, Mapping[str, Any]]:
    group = next((n for n in nodes.values() if n.get("name") == f"{workflow_name}[0]"), None)
    if group is None:
        return {}
    found: dict[int, Mapping[str, Any]] = {}
    for child_id in group.get("children") or []:
        child = nodes.get(child_id)
        match = _POSITION.match(str(child.get("displayName", ""))) if child else None
        if child is not None and match:
            found[int(match.group(1))] = child
    return found


def _from_node(
    index: int, params: dict[str, str], node: Mapping[str, Any] | None, metric: str | None, workflow: str
) -> TrialResult:
    if node is None:
        return TrialResult(index, params, PENDING, workflow=workflow)
    argo_phase = node.get("phase") or "Pending"
    message = str(node.get("message") or "")
    phase = _NODE_PHASES.get(argo_phase)
    value = None
    if argo_phase == "Succeeded":
        problem = None
        if metric is not None:
            value, problem = _metric_value(node, metric)
        phase = SUCCEEDED if problem is None else METRICS_UNAVAILABLE
        message = problem or message
    elif phase is None:
        # Skipped, Omitted, or a phase unknown to this reader: the trial produced no result.
        phase, message = FAILED, f"Argo marked the trial {argo_phase}. {message}".strip()
    return TrialResult(
        index,
        params,
        phase,
        started_at=parse_time(node.get("startedAt")),
        finished_at=parse_time(node.get("finishedAt")),
        metric=value,
        message=message,
        workflow=workflow,
        node_id=node.get("id"),
    )


def _metric_value(node: Mapping[str, Any], metric: str) -> tuple[float | None, str | None]:
    """(the metric, None) or (None, why it is unavailable)."""
    parameters = (node.get("outputs") or {}).get("parameters") or []
    raw = next(
        (p.get("value") for p in parameters if isinstance(p, Mapping) and p.get("name") == metric), None
    )
    if raw is None:
        return None, f"output parameter {metric!r} is missing"
    try:
        value = float(str(raw).strip())
    except ValueError:
        return None, f"output parameter {metric!r} is not a number: {str(raw)[:80]!r}"
    if not math.isfinite(value):
        return None, f"output parameter {metric!r} is not a finite number: {raw!r}"
    return value, None
