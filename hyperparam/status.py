"""Pure: what a sweep's status says, from what the reconcile observed (its Workflows and its stored trials).

Phases: Pending (no Workflow yet), Running, Succeeded (every planned trial finished, or the objective's
target was reached and nothing runs any more) and Failed (an invalid spec, a Workflow our linter refuses, or
more failed trials than maxFailedTrials). Conditions follow Katib's experiments: Created, Running,
Succeeded, Failed, each with a reason and a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hyperparam.trials import STOP_TARGET_REACHED, STOP_TOO_MANY_FAILURES
from kube.conditions import FALSE, TRUE, set_condition, timestamp

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED})

CREATED = "Created"
REASON_INVALID_SPEC = "InvalidSpec"
REASON_LINT_FAILED = "WorkflowLintFailed"
REASON_ALL_FINISHED = "AllTrialsFinished"
REASON_RUNNING = "TrialsRunning"
REASON_CREATED = "SweepCreated"


@dataclass(frozen=True)
class BestTrial:
    index: int
    parameters: dict[str, str]
    metric: float
    workflow: str

    def to_status(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "parameters": self.parameters,
            "metric": self.metric,
            "workflow": self.workflow,
        }


@dataclass(frozen=True)
class Observed:
    """What one reconcile saw. `error` (reason, message) is a spec or lint failure that stops the sweep."""

    planned: int = 0
    trials_per_batch: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    best: BestTrial | None = None
    workflows: tuple[str, ...] = ()
    active: bool = False
    all_batches_created: bool = False
    stop: str | None = None
    target: float | None = None
    max_failed: int | None = None
    error: tuple[str, str] | None = None

    @property
    def failed(self) -> int:
        return sum(count for phase, count in self.counts.items() if phase in _FAILED_COUNTS)

    @property
    def finished(self) -> int:
        return self.failed + self.counts.get("Succeeded", 0)


_FAILED_COUNTS = frozenset({"Failed", "Error", "MetricsUnavailable"})


def phase_of(observed: Observed) -> tuple[str, str, str]:
    """(phase, reason, message)."""
    if observed.error is not None:
        return FAILED, *observed.error
    if observed.stop == STOP_TOO_MANY_FAILURES:
        message = f"{observed.failed} trials failed, more than maxFailedTrials ({observed.max_failed})"
        return FAILED, STOP_TOO_MANY_FAILURES, message
    if observed.stop == STOP_TARGET_REACHED and observed.best is not None:
        message = (
            f"trial {observed.best.index} reached the objective's target {observed.target:g} "
            f"with {observed.best.metric:g}"
        )
        if observed.active:
            message += "; stopping the running trials"
        return (RUNNING if observed.active else SUCCEEDED), STOP_TARGET_REACHED, message
    if observed.all_batches_created and not observed.active:
        return SUCCEEDED, REASON_ALL_FINISHED, f"all {observed.finished} trials finished"
    if not observed.workflows:
        return PENDING, REASON_CREATED, "no trial started yet"
    return RUNNING, REASON_RUNNING, f"{observed.finished}/{observed.planned} trials finished"


def desired_status(
    previous: Mapping[str, Any] | None, generation: int, observed: Observed, now: datetime
) -> dict[str, Any]:
    """The whole status to write (compare with `kube.conditions.status_changed` before patching)."""
    previous = previous or {}
    phase, reason, message = phase_of(observed)
    conditions = list(previous.get("conditions") or [])
    if observed.error is None or observed.error[0] != REASON_INVALID_SPEC:
        conditions = set_condition(
            conditions, CREATED, TRUE, REASON_CREATED, "the sweep's spec is valid", now
        )
    running = phase in (PENDING, RUNNING)
    conditions = set_condition(
        conditions, RUNNING, TRUE if running else FALSE, reason if running else phase, message, now
    )
    for terminal in (SUCCEEDED, FAILED):
        if phase == terminal:
            conditions = set_condition(conditions, terminal, TRUE, reason, message, now)
        elif any(condition.get("type") == terminal for condition in conditions):
            conditions = set_condition(conditions, terminal, FALSE, reason, message, now)
    status: dict[str, Any] = {
        "phase": phase,
        "message": message,
        "conditions": conditions,
        "trials": dict(observed.counts),
        "progress": f"{observed.finished}/{observed.planned}",
        "bestTrial": observed.best.to_status() if observed.best is not None else None,
        "workflows": list(observed.workflows),
        "startTime": previous.get("startTime") or timestamp(now),
        "completionTime": (previous.get("completionTime") or timestamp(now))
        if phase in TERMINAL_PHASES
        else None,
        "observedGeneration": generation,
    }
    if observed.trials_per_batch is not None:
        status["trialsPerBatch"] = observed.trials_per_batch
    elif previous.get("trialsPerBatch"):
        status["trialsPerBatch"] = previous["trialsPerBatch"]
    return status
