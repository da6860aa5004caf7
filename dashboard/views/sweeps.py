"""Sweeps: the list with trial counts and the best metric; a sweep's page with tabs Overview (live status,
plots), Trials (sortable, best highlighted, CSV) and YAML; opening all its trials in TensorBoard."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render

import limits
from access.scopes import request_scope
from dashboard import plots
from hyperparam import actions
from hyperparam.api.export import csv_response
from hyperparam.api.filters import trial_ordering
from hyperparam.manifests import API_VERSION, KIND
from hyperparam.models import Sweep, Trial
from hyperparam.status import FAILED, PENDING, RUNNING, SUCCEEDED, TERMINAL_PHASES
from hyperparam.sweep import ADAPTIVE_ALGORITHMS, ALGORITHMS
from hyperparam.trials import PHASES as TRIAL_PHASES
from web import csp

from . import mirrors, tensorboards
from .common import POLL_SECONDS, is_fragment, manifest_of, page
from .mirrors import ListFilters, MirrorPages, name_prefix_field
from .trainjobs import sweep_figures, sweep_train_jobs

LIST_COLUMNS = (
    "id", "uid", "namespace", "name", "phase", "algorithm", "goal", "metric_name", "trial_counts",
    "trials_total", "trials_finished", "trials_planned", "best_metric", "best_trial_index", "created_at",
    "deleted_at",
)  # fmt: skip
TRIAL_PAGE_SIZE = 50
TRIAL_ORDERINGS = {"best": "best first", "index": "trial number", "-index": "newest trial first",
                   "metric": "metric, lowest first", "-metric": "metric, highest first"}  # fmt: skip
INDEX_ORDERINGS = {key: TRIAL_ORDERINGS[key] for key in ("index", "-index")}
TABS = ("overview", "trials", "yaml")


class SweepFilters(ListFilters):
    phase = forms.ChoiceField(
        required=False, choices=[("", "any phase")] + [(p, p) for p in (PENDING, RUNNING, SUCCEEDED, FAILED)]
    )
    algorithm = forms.ChoiceField(
        required=False, choices=[("", "any algorithm")] + [(a, a) for a in ALGORITHMS]
    )
    name = name_prefix_field()


SWEEPS = MirrorPages(
    Sweep, "sweep", SweepFilters, LIST_COLUMNS,
    is_live=lambda sweep: sweep.phase not in TERMINAL_PHASES, context={"trial_phases": TRIAL_PHASES},
)  # fmt: skip
sweep_list = SWEEPS.list_view()


def _base_context(request: HttpRequest, sweep: Sweep, tab: str) -> dict[str, Any]:
    return {
        "sweep": sweep,
        "tab": tab,
        "tabs": TABS,
        "live": sweep.deleted_at is None and sweep.phase not in TERMINAL_PHASES,
        "poll_seconds": POLL_SECONDS,
        "trial_phases": TRIAL_PHASES,
        "adaptive": sweep.algorithm in ADAPTIVE_ALGORITHMS,
        "can_write": request_scope(request).can_write(sweep.namespace),
    }


@page
def sweep_detail(request: HttpRequest, pk: int, tab: str = "overview") -> HttpResponse:
    if tab not in TABS:
        raise Http404("No such tab.")
    sweep = SWEEPS.row(request, pk)
    context = _base_context(request, sweep, tab)
    if is_fragment(request):
        return render(request, "dashboard/sweeps/_status.html", context)
    if tab == "trials":
        context.update(_trials_context(request, sweep))
    elif tab == "yaml":
        context["manifest"] = manifest_of(sweep, API_VERSION, KIND)
    else:
        context["train_jobs"] = sweep_train_jobs(sweep).exists()
    response = render(request, "dashboard/sweeps/detail.html", context)
    return csp.allow_plots(response) if tab == "overview" else response


def _page_number(text: str, last: int) -> int:
    """`?page=`, from 1 to `last` (no sweep has more pages: a page past it is empty anyway, and its offset
    must stay a number the database takes); anything else is page 1."""
    if not (text.isascii() and text.isdigit()):
        return 1
    if len(text) > len(str(last)):
        return last  # more digits than the last page has: past it (and never a 4,300-digit int())
    return min(max(int(text), 1), last)


def _trials_context(request: HttpRequest, sweep: Sweep) -> dict[str, Any]:
    # A sweep without an objective has no metric to order by: its trials come in index order.
    orderings = TRIAL_ORDERINGS if sweep.metric_name else INDEX_ORDERINGS
    default = "best" if sweep.metric_name else "index"
    ordering = request.GET.get("order", default)
    if ordering not in orderings:
        ordering = default
    phase = request.GET.get("phase", "")
    trials = Trial.objects.filter(sweep=sweep)
    if phase in TRIAL_PHASES:
        trials = trials.filter(phase=phase)
    number = request.GET.get("page", "1")
    page_number = _page_number(number, limits.current().trials_per_sweep // TRIAL_PAGE_SIZE + 1)
    start = (page_number - 1) * TRIAL_PAGE_SIZE
    rows = list(trials.order_by(*trial_ordering(ordering, sweep.goal))[start : start + TRIAL_PAGE_SIZE + 1])
    names = sweep.parameter_names
    return {
        "trials": [
            (trial, [trial.params.get(name, "") for name in names]) for trial in rows[:TRIAL_PAGE_SIZE]
        ],
        "parameter_names": names,
        "ordering": ordering,
        "orderings": orderings,
        "phase": phase if phase in TRIAL_PHASES else "",
        "page_number": page_number,
        "has_next": len(rows) > TRIAL_PAGE_SIZE,
    }


@page
def sweep_plots(request: HttpRequest, pk: int) -> JsonResponse:
    """The figures of the Overview tab as Plotly JSON, drawn from every trial that reported a metric and
    downsampled in dashboard.plots so 10,000 trials stay responsive."""
    sweep = SWEEPS.row(request, pk)
    rows = Trial.objects.filter(sweep=sweep, metric__isnull=False).values_list("index", "params", "metric")
    points = [
        plots.TrialPoint(index, params, metric)
        for index, params, metric in rows.iterator(2000)
        if metric is not None  # the query's filter; this tells the type checker
    ]
    goal: plots.Goal = "maximize" if sweep.goal == "maximize" else "minimize"
    metric_name = sweep.metric_name or "objective"
    names = sweep.parameter_names
    body: dict[str, Any] = {"trials": len(points)}
    if points:
        body["parallel"] = plots.parallel_coordinates(points, names, metric_name, goal)
        body["history"] = plots.optimisation_history(points, metric_name, goal)
        if sweep.algorithm in ADAPTIVE_ALGORITHMS and names:
            body["importances"] = plots.importance_chart(plots.importances(points, names))
    return JsonResponse(body)


@page
def sweep_trainjob_plots(request: HttpRequest, pk: int) -> JsonResponse:
    """Each metric of every trial's TrainJob side by side (dashboard.trainplots.side_by_side)."""
    return JsonResponse(sweep_figures(SWEEPS.row(request, pk)))


@page
def sweep_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    sweep = SWEEPS.row(request, pk)
    ordering = request.GET.get("order", "best")
    trials = Trial.objects.filter(sweep=sweep).order_by(
        *trial_ordering(ordering if ordering in TRIAL_ORDERINGS else "best", sweep.goal)
    )
    return csv_response(sweep, trials)


# Open all of the sweep's trials in one TensorBoard (tensorboard.actions.spawn, idempotent).
sweep_tensorboard = tensorboards.source_view(
    SWEEPS, kind=lambda _: KIND, contents=lambda sweep: f"every trial of {sweep.name}"
)


sweep_stop = SWEEPS.stop_view(
    lambda sweep: actions.delete_sweep(sweep.namespace, sweep.name, sweep.uid),
    title=lambda sweep: f"Sweep {sweep.name}", consequence="its Workflows are deleted",
)  # fmt: skip


@page
def sweep_by_name(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """A sweep named by the user (after a submit): its page once mirrored, a waiting page before."""
    sweeps = Sweep.objects.all()
    return mirrors.by_name(request, sweeps, "dashboard:sweep", namespace=namespace, kind=KIND, name=name)
