"""Trial rows from the generated Workflows, and the sweep's counts and best trial read back from them.

The reconcile calls `sync_workflow` for every Workflow whose resourceVersion changed since its trials were
last read. One Workflow costs two statements whatever its size: a SELECT of the stored rows of its trials,
then one INSERT ... ON CONFLICT DO UPDATE of the rows that differ (unchanged trials are not rewritten, so a
busy batch rewrites only the few trials that moved). Counts and the best trial are two indexed queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count, F

from hyperparam.batching import BatchPlan
from hyperparam.models import Sweep, Trial
from hyperparam.sweep import Objective
from hyperparam.trials import (
    FAILED_PHASES,
    FINISHED_PHASES,
    PHASES,
    SUCCEEDED,
    TrialResult,
    TrialSummary,
    read_trials,
)

BULK_BATCH_SIZE = 1000
_COMPARED = ("phase", "metric", "message", "started_at", "finished_at", "workflow", "node_id", "params")
_UPDATED = [*_COMPARED, "updated_at"]


def sync_workflow(sweep: Sweep, workflow: Mapping[str, Any], metric: str | None) -> int:
    """Upsert the trials of one Workflow; returns how many rows were written."""
    return sync_results(sweep, read_trials(workflow, metric))


def sync_results(sweep: Sweep, results: Sequence[TrialResult]) -> int:
    """Write the results that differ from the stored rows, in one statement per BULK_BATCH_SIZE rows."""
    if not results:
        return 0
    indices = [result.index for result in results]
    stored = {
        row[0]: row[1:]
        for row in Trial.objects.filter(sweep=sweep, index__gte=min(indices), index__lte=max(indices))
        .order_by()
        .values_list("index", *_COMPARED)
    }
    changed = [result for result in results if stored.get(result.index) != _compared_values(result)]
    if not changed:
        return 0
    Trial.objects.bulk_create(
        [_row(sweep, result) for result in changed],
        batch_size=BULK_BATCH_SIZE,
        update_conflicts=True,
        unique_fields=["sweep", "index"],
        update_fields=_UPDATED,
    )
    return len(changed)


def summarize_stored(sweep: Sweep, objective: Objective | None) -> TrialSummary:
    """Counts (one GROUP BY over the phase index) and the best trial (one row from the metric index), as
    `trials.summarize` would say them; ties for best go to the lowest trial index there too. A sweep without
    an objective has no best trial (and costs no second query)."""
    counts = dict.fromkeys(PHASES, 0)
    for phase, count in (
        Trial.objects.filter(sweep=sweep).order_by().values_list("phase").annotate(count=Count("id"))
    ):
        counts[phase] = count
    best = best_trial(sweep, objective) if objective is not None else None
    result = None
    if best is not None:
        result = TrialResult(best.index, best.params, best.phase, metric=best.metric, workflow=best.workflow)
    return TrialSummary(counts, result)


def best_trial(sweep: Sweep, objective: Objective) -> Trial | None:
    metric = (
        F("metric").asc(nulls_last=True)
        if objective.goal == "minimize"
        else F("metric").desc(nulls_last=True)
    )
    return (
        Trial.objects.filter(sweep=sweep, phase=SUCCEEDED, metric__isnull=False)
        .order_by(metric, "index")
        .first()
    )


def first_failures(sweep: Sweep, limit: int) -> list[TrialResult]:
    """The lowest-numbered failed trials with their messages (one row per trial, from the phase index):
    what the status and the dashboard show so a failing sweep says why without opening its Workflows."""
    rows = (
        Trial.objects.filter(sweep=sweep, phase__in=sorted(FAILED_PHASES))
        .order_by("index")
        .values_list("index", "phase", "message", "workflow")[:limit]
    )
    return [
        TrialResult(index, {}, phase, message=message, workflow=workflow)
        for index, phase, message, workflow in rows
    ]


def finished_batches(sweep: Sweep, plan: BatchPlan, *, exclude: set[int]) -> set[int]:
    """Batches (other than `exclude`, the listed ones) whose every trial is stored as finished: their
    Workflow may be gone, their trials are done. One GROUP BY, skipped when every batch is listed."""
    if len(exclude) >= plan.batch_count:
        return set()
    per_batch = (
        Trial.objects.filter(sweep=sweep, phase__in=sorted(FINISHED_PHASES))
        .order_by()
        .annotate(batch=F("index") / plan.trials_per_batch)
        .values_list("batch")
        .annotate(count=Count("id"))
    )
    return {
        int(batch)
        for batch, count in per_batch
        if int(batch) not in exclude
        and 0 <= int(batch) < plan.batch_count
        and count == len(plan.batch_trials(int(batch)))
    }


def _compared_values(result: TrialResult) -> tuple[Any, ...]:
    return (
        result.phase,
        result.metric,
        result.message,
        result.started_at,
        result.finished_at,
        result.workflow,
        result.node_id or "",
        result.params,
    )


def _row(sweep: Sweep, result: TrialResult) -> Trial:
    return Trial(
        sweep=sweep,
        index=result.index,
        params=result.params,
        phase=result.phase,
        metric=result.metric,
        message=result.message,
        started_at=result.started_at,
        finished_at=result.finished_at,
        workflow=result.workflow,
        node_id=result.node_id or "",
    )
