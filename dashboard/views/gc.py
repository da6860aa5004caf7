"""Garbage collection: the runs (newest first) and what each deleted, within the user's namespaces; the
schedule lives in django-celery-beat, edited in the admin."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django_celery_beat.models import PeriodicTask

from dashboard.access import readable, request_scope
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
    context = {"run": run, "deletions": rows[:DELETIONS_PAGE], "next_after": next_after, "first": not after}
    return render(request, "dashboard/gc/run.html", context)


def _run(request: HttpRequest, pk: int) -> GCRun:
    run = visible_runs(request).filter(pk=pk).first()
    if run is None:
        raise Http404("No such GC run in the namespaces you can read.")
    return run
