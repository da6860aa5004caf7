"""Read-only admin of sweeps and their trials, built for 100k trials per sweep.

The sweep list shows phase, trial counts and the best metric from the sweep's own columns (one query per
page). A sweep's page shows its best trials and links to its trial list, where each hyperparameter is a
column, the best trials come first and any column sorts; pages are counted from the sweep's status, never
with COUNT(*) over the trials.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import F, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from hyperparam import trials as trial_phases
from hyperparam.models import Sweep, SweepHistory, Trial
from web.admin import HistoryInline, MirrorAdmin, ReadOnlyAdmin, as_the_cluster_holds_it

SWEEP_PARAMETER = "sweep__id__exact"
PHASE_PARAMETER = "phase__exact"
#: Count matching rows up to this many when the sweep's status cannot say; past it, say "this many".
COUNT_CAP = 10_000
BEST_ON_SWEEP_PAGE = 10


class KnownCountPaginator(Paginator):
    """Pages of a query whose row count is known already (from the sweep's status) or counted up to a cap
    (`SELECT COUNT(*) FROM (... LIMIT n)`), never over the whole table."""

    def __init__(self, *args: Any, known_count: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known_count = known_count

    @cached_property
    def count(self) -> int:
        if self.known_count is not None:
            return self.known_count
        object_list: QuerySet[Any] = self.object_list  # type: ignore[assignment]
        return object_list[: COUNT_CAP + 1].count()


class SweepHistoryInline(HistoryInline):
    model = SweepHistory


@admin.register(Sweep)
class SweepAdmin(MirrorAdmin):
    list_display = (
        "name",
        "namespace",
        "phase",
        "algorithm",
        "progress",
        "succeeded",
        "failed",
        "best_metric",
        "created_at",
    )
    list_filter = ("phase", "algorithm", "namespace")
    search_fields = ("^name",)
    paginator = KnownCountPaginator
    inlines = (SweepHistoryInline,)
    list_deferred = (*MirrorAdmin.list_deferred, "mirrored_batches", "workflows")
    fieldsets = (
        (None, {"fields": ("namespace", "name", "uid", "phase", "algorithm", "goal", "metric_name")}),
        ("Trials", {"fields": ("progress", "counts", "trial_errors", "best", "best_trials")}),
        ("Times", {"fields": ("created_at", "updated_at", "deleted_at")}),
        as_the_cluster_holds_it(("workflows", "labels", "spec", "status", "resource_version", "generation")),
    )
    readonly_fields = ("progress", "counts", "trial_errors", "best", "best_trials")

    @admin.display(description="trials finished", ordering="trials_finished")
    def progress(self, sweep: Sweep) -> str:
        return f"{sweep.trials_finished} / {sweep.trials_planned}"

    @admin.display(description="succeeded")
    def succeeded(self, sweep: Sweep) -> int:
        return int(sweep.trial_counts.get(trial_phases.SUCCEEDED, 0))

    @admin.display(description="failed")
    def failed(self, sweep: Sweep) -> int:
        return sum(int(sweep.trial_counts.get(phase, 0)) for phase in trial_phases.FAILED_PHASES)

    @admin.display(description="trials by phase")
    def counts(self, sweep: Sweep) -> str:
        url = _trials_url(sweep)
        return format_html_join(
            ", ",
            '<a href="{}&{}={}">{}: {}</a>',
            (
                (url, PHASE_PARAMETER, phase, phase, count)
                for phase, count in sweep.trial_counts.items()
                if count
            ),
        ) or format_html('<a href="{}">no trials yet</a>', url)

    @admin.display(description="first failed trials")
    def trial_errors(self, sweep: Sweep) -> str:
        errors = (sweep.status or {}).get("trialErrors") or []
        return (
            format_html_join(
                "",
                "<p>#{}: {} — {}</p>",
                ((error.get("index"), error.get("phase"), error.get("message")) for error in errors),
            )
            or "—"
        )

    @admin.display(description="best trial")
    def best(self, sweep: Sweep) -> str:
        if not sweep.metric_name:
            return "— (no objective: the sweep runs every combination; nothing is best)"
        if sweep.best_trial_index is None:
            return "—"
        values = ", ".join(f"{name}={value}" for name, value in sweep.best_parameters.items())
        return f"#{sweep.best_trial_index}: {sweep.metric_name} = {sweep.best_metric:g} ({values})"

    @admin.display(description=f"best {BEST_ON_SWEEP_PAGE} trials")
    def best_trials(self, sweep: Sweep) -> str:
        if not sweep.metric_name:
            return format_html('<a href="{}">All trials →</a>', _trials_url(sweep))
        names = sweep.parameter_names
        rows = Trial.objects.filter(sweep=sweep, metric__isnull=False).order_by(
            _best_first(sweep.goal), "index"
        )[:BEST_ON_SWEEP_PAGE]
        header = format_html_join(
            "", "<th>{}</th>", ((column,) for column in ["#", *names, sweep.metric_name])
        )
        body = format_html_join(
            "",
            "<tr>{}</tr>",
            (
                (
                    format_html_join(
                        "",
                        "<td>{}</td>",
                        (
                            (cell,)
                            for cell in [trial.index, *(trial.params.get(n, "") for n in names), trial.metric]
                        ),
                    ),
                )
                for trial in rows
            ),
        )
        return format_html(
            '<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table><p><a href="{}">All trials →</a></p>',
            header,
            body,
            _trials_url(sweep),
        )


@admin.register(Trial)
class TrialAdmin(ReadOnlyAdmin):
    """Open it from a sweep (`?sweep__id__exact=<id>`): the sweep's hyperparameters become columns."""

    list_filter = ("phase",)
    list_select_related = ("sweep",)
    list_per_page = 100
    show_full_result_count = False
    ordering = ("sweep", "index")
    readonly_fields = ("sweep_link",)

    def get_list_display(self, request: HttpRequest) -> tuple[Any, ...]:
        sweep = self._sweep(request)
        if sweep is None:
            return ("sweep", "index", "phase", "metric", "params", "finished_at")
        columns = tuple(_parameter_column(name) for name in sweep.parameter_names)
        metric = ("metric",) if sweep.metric_name else ()
        return ("index", "phase", *metric, *columns, "started_at", "finished_at", "workflow", "message")

    def get_ordering(self, request: HttpRequest) -> tuple[Any, ...]:
        sweep = self._sweep(request)
        if sweep is None:
            return self.ordering
        if not sweep.metric_name:
            return ("index",)
        return (_best_first(sweep.goal), "index")

    def get_paginator(
        self, request: HttpRequest, queryset: Any, per_page: int, *args: Any, **kwargs: Any
    ) -> Any:
        return KnownCountPaginator(queryset, per_page, known_count=self._known_count(request))

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        return lookup == SWEEP_PARAMETER or super().lookup_allowed(lookup, value, request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Trial]:
        return super().get_queryset(request).defer("sweep__spec", "sweep__status", "sweep__mirrored_batches")

    @admin.display(description="sweep")
    def sweep_link(self, trial: Trial) -> str:
        url = reverse("admin:hyperparam_sweep_change", args=[trial.sweep_id])
        return format_html('<a href="{}">{}</a>', url, trial.sweep)

    def _sweep(self, request: HttpRequest) -> Sweep | None:
        """The sweep named by the query string, read once per request."""
        if not hasattr(request, "_hyperparam_sweep"):
            value = request.GET.get(SWEEP_PARAMETER, "")
            sweep = None
            if value.isdigit():
                sweep = (
                    Sweep.objects.only("spec", "goal", "metric_name", "trial_counts")
                    .filter(pk=int(value))
                    .first()
                )
            request._hyperparam_sweep = sweep  # type: ignore[attr-defined]
        return request._hyperparam_sweep  # type: ignore[attr-defined]

    def _known_count(self, request: HttpRequest) -> int | None:
        """The page count from the sweep's status when the list is that sweep's trials (maybe of a phase)."""
        sweep = self._sweep(request)
        filters = {key for key in request.GET if key not in ("o", "p")}
        if sweep is None or not filters <= {SWEEP_PARAMETER, PHASE_PARAMETER}:
            return None
        counts = {phase: int(count) for phase, count in sweep.trial_counts.items()}
        phase = request.GET.get(PHASE_PARAMETER)
        return counts.get(phase, 0) if phase else sum(counts.values())


def _parameter_column(name: str) -> Any:
    def column(trial: Trial) -> str:
        return str(trial.params.get(name, ""))

    column.short_description = name  # type: ignore[attr-defined]
    column.__name__ = f"param_{name}"
    return column


def _best_first(goal: str) -> Any:
    return F("metric").desc(nulls_last=True) if goal == "maximize" else F("metric").asc(nulls_last=True)


def _trials_url(sweep: Sweep) -> str:
    return f"{reverse('admin:hyperparam_trial_changelist')}?{SWEEP_PARAMETER}={sweep.pk}"
