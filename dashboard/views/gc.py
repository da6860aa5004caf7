"""Garbage collection: the runs (newest first) and what each deleted, within the user's namespaces; the
schedule lives in django-celery-beat, edited in the admin.

A run over every namespace is shared by all tenants, so a tenant sees only its part of it: the deletions and
failures in namespaces they can read. The run's own figures (totals, note) describe the whole cluster and
are shown to staff only (issue 16, hole 4)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django_celery_beat.models import PeriodicTask

from access.scopes import NamespaceScope, request_scope
from dashboard.access import readable
from dashboard.pagination import BadCursor, newest_first
from garbage.models import GCDeletion, GCRun

from .common import page

SCHEDULE_TASK = "garbage.collect_pods"
DELETIONS_PAGE = 100


def visible_runs(request: HttpRequest) -> QuerySet[GCRun]:
    """Runs over every namespace, and runs over one the user can read."""
    scope = request_scope(request)
    runs = GCRun.objects.all()
    if scope.everywhere:
        return runs
    return runs.filter(Q(namespace="") | Q(namespace__in=sorted(scope.readable)))


def figures_visible(request: HttpRequest, run: GCRun) -> bool:
    """A run's totals and note: staff see every run's; others only those of a run over one namespace they
    can read (its figures are about that namespace alone)."""
    scope = request_scope(request)
    if request.user.is_staff or scope.everywhere:
        return True
    return bool(run.namespace) and scope.can_read(run.namespace)


def visible_failures(failures: Any, scope: NamespaceScope) -> list[dict[str, Any]]:
    """The recorded failures in namespaces the scope can read. A failure with no namespace (a cluster-wide
    listing) or recorded before failures named theirs is shown only to a scope over every namespace."""
    if not isinstance(failures, list):
        return []
    entries = [failure for failure in failures if isinstance(failure, dict)]
    if scope.everywhere:
        return entries
    return [
        failure
        for failure in entries
        if isinstance(failure.get("namespace"), str)
        and failure["namespace"]
        and scope.can_read(failure["namespace"])
    ]


def mark_figures(request: HttpRequest, runs: list[GCRun]) -> None:
    """Set `figures_visible` on each run, and for the others `yours`: what it deleted in the user's
    namespaces (one query for the page)."""
    hidden = []
    for run in runs:
        run.figures_visible = figures_visible(request, run)  # type: ignore[attr-defined]
        if not run.figures_visible:  # type: ignore[attr-defined]
            hidden.append(run.pk)
    if not hidden:
        return
    counts = dict(
        readable(request, GCDeletion.objects.filter(run_id__in=hidden))
        .order_by()
        .values_list("run_id")
        .annotate(count=Count("id"))
    )
    for run in runs:
        run.yours = counts.get(run.pk, 0)  # type: ignore[attr-defined]


def schedule_link(request: HttpRequest) -> tuple[PeriodicTask | None, str]:
    """The collection's periodic task and, for staff, its admin page."""
    task = PeriodicTask.objects.filter(name=SCHEDULE_TASK).select_related("interval", "crontab").first()
    if task is None or not request.user.is_staff:
        return task, ""
    try:
        return task, reverse("admin:django_celery_beat_periodictask_change", args=[task.pk])
    except NoReverseMatch:
        return task, ""


@page
def gc_list(request: HttpRequest) -> HttpResponse:
    try:
        runs = newest_first(visible_runs(request), "started", request.GET.get("after"))
    except BadCursor:
        return redirect("dashboard:gc")
    mark_figures(request, runs.rows)
    task, admin_url = schedule_link(request)
    context = {"page": runs, "task": task, "admin_url": admin_url}
    return render(request, "dashboard/gc/list.html", context)


@page
def gc_run(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    after = request.GET.get("after", "")
    deletions = readable(request, GCDeletion.objects.filter(run=run)).order_by("id")
    if after.isdigit():
        deletions = deletions.filter(id__gt=int(after))
    rows = list(deletions[: DELETIONS_PAGE + 1])
    next_after = rows[DELETIONS_PAGE - 1].id if len(rows) > DELETIONS_PAGE else None
    mark_figures(request, [run])
    context = {
        "failures": visible_failures(run.failures, request_scope(request)),
        "run": run,
        "deletions": rows[:DELETIONS_PAGE],
        "next_after": next_after,
        "first": not after,
    }
    return render(request, "dashboard/gc/run.html", context)


def _run(request: HttpRequest, pk: int) -> GCRun:
    run = visible_runs(request).filter(pk=pk).first()
    if run is None:
        raise Http404("No such GC run in the namespaces you can read.")
    return run
