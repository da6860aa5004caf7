"""Pure: what a sweep's status says, from what the reconcile observed (its Workflows and its stored trials).

Phases: Pending (no Workflow yet), Running, Succeeded and Failed. A sweep succeeds only when its trials did
what it asks: every trial succeeded for a sweep without an objective (or no more failed than maxFailedTrials
allows), at least one reported the metric for an optimising sweep, or the objective's target was reached.
It fails on an invalid spec, a Workflow our linter refuses, more failed trials than maxFailedTrials, or
trials that did not do what it asks; the first failed trials' messages are on the status (`trialErrors`)
and in the message. Conditions follow Katib's experiments: Created, Running, Succeeded, Failed, each with a
reason and a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hyperparam.trials import STOP_TARGET_REACHED, STOP_TOO_MANY_FAILURES, too_many_failures
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
REASON_TRIALS_FAILED = "TrialsFailed"
REASON_NO_METRIC = "NoTrialReportedTheMetric"
# How many failed trials the status names, lowest index first; enough to see a pattern, small enough for
# `kubectl describe` and the status to stay readable.
TRIAL_ERRORS_SHOWN = 5
_TRIAL_ERROR_LENGTH = 300
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
class TrialError:
    """A failed trial as the status names it: its number, its phase and why (the node's or our message)."""

    index: int
    phase: str
    message: str

    def to_status(self) -> dict[str, Any]:
        return {"index": self.index, "phase": self.phase, "message": self.message[:_TRIAL_ERROR_LENGTH]}


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
    # The objective's metric, or None for a sweep that only runs its trials (it then has no best trial).
    metric: str | None = None
    trial_errors: tuple[TrialError, ...] = ()

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
        return FAILED, STOP_TOO_MANY_FAILURES, message + _first_error(observed)
    if observed.stop == STOP_TARGET_REACHED and observed.best is not None:
        message = (
            f"trial {observed.best.index} reached the objective's target {observed.target:g} "
            f"with {observed.best.metric:g}"
        )
        if observed.active:
            message += "; stopping the running trials"
        return (RUNNING if observed.active else SUCCEEDED), STOP_TARGET_REACHED, message
    if observed.all_batches_created and not observed.active:
        return _ended(observed)
    if not observed.workflows:
        return PENDING, REASON_CREATED, "no trial started yet"
    return RUNNING, REASON_RUNNING, f"{observed.finished}/{observed.planned} trials finished"


def _ended(observed: Observed) -> tuple[str, str, str]:
    """Every trial ran: did they do what the sweep asks?"""
    failed, finished = observed.failed, observed.finished
    if observed.metric is not None and observed.best is None:
        message = (
            f"no trial reported the objective's metric {observed.metric!r} ({failed} of {finished} failed)"
        )
        return FAILED, REASON_NO_METRIC, message + _first_error(observed)
    if observed.metric is None and too_many_failures(failed, observed.max_failed, every_trial_ran=True):
        return FAILED, REASON_TRIALS_FAILED, f"{failed} of {finished} trials failed" + _first_error(observed)
    message = f"all {finished} trials finished"
    if failed:
        message += f", {failed} of them failed" + _first_error(observed)
    return SUCCEEDED, REASON_ALL_FINISHED, message


def _first_error(observed: Observed) -> str:
    if not observed.trial_errors:
        return ""
    first = observed.trial_errors[0]
    return f"; trial {first.index} ({first.phase}): {first.message[:_TRIAL_ERROR_LENGTH]}"


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
        "trialErrors": [error.to_status() for error in observed.trial_errors] or None,
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
