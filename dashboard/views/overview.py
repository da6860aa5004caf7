"""The overview: counts by phase of jobs and sweeps, running TensorBoards, the last GC run and recent
failures, all within the user's namespaces. A fixed handful of queries, each through an index."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.access import readable
from hyperparam.models import Sweep
from jobs.models import TrainingJob
from jobs.status import CONDITION_TYPES
from tensorboard.models import Tensorboard
from tensorboard.status import READY

from .common import page
from .gc import mark_figures, visible_runs

RECENT_FAILURES = 8
SWEEP_PHASES = ("Pending", "Running", "Succeeded", "Failed")


def counts_by_phase(queryset: QuerySet[Any], phases: tuple[str, ...]) -> list[tuple[str, int]]:
    """(phase, count) for every known phase (zeros included, so the layout never jumps), then others."""
    found = dict(queryset.order_by().values_list("phase").annotate(count=Count("id")))
    ordered = [(phase, found.pop(phase, 0)) for phase in phases]
    return ordered + sorted((phase or "Unknown", count) for phase, count in found.items())


@page
def overview(request: HttpRequest) -> HttpResponse:
    jobs = readable(request, TrainingJob.objects.filter(deleted_at__isnull=True))
    sweeps = readable(request, Sweep.objects.filter(deleted_at__isnull=True))
    tensorboards = readable(request, Tensorboard.objects.filter(deleted_at__isnull=True, phase=READY))
    failed_jobs = (
        jobs.filter(phase="Failed")
        .only(
            "id",
            "namespace",
            "name",
            "kind",
            "state_reason",
            "state_message",
            "completion_time",
            "created_at",
        )
        .order_by("-created_at", "-id")[:RECENT_FAILURES]
    )
    failed_sweeps = (
        sweeps.filter(phase="Failed")
        .only("id", "namespace", "name", "algorithm", "created_at")
        .order_by("-created_at", "-id")[:RECENT_FAILURES]
    )
    last_gc = visible_runs(request).order_by("-started", "-id").first()
    if last_gc is not None:
        mark_figures(request, [last_gc])
    context = {
        "job_counts": counts_by_phase(jobs, CONDITION_TYPES),
        "sweep_counts": counts_by_phase(sweeps, SWEEP_PHASES),
        "tensorboards": list(
            tensorboards.only(
                "id", "namespace", "name", "url", "source_kind", "source_name", "created_at"
            ).order_by("-created_at")[:10]
        ),
        "last_gc": last_gc,
        "failed_jobs": list(failed_jobs),
        "failed_sweeps": list(failed_sweeps),
    }
    return render(request, "dashboard/overview.html", context)
