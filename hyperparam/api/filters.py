"""Query filters of /api/hyperparams/ and of a sweep's trials, checked like any other input."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Q, QuerySet
from rest_framework import serializers
from rest_framework.request import Request

from hyperparam.models import Sweep
from hyperparam.status import FAILED, PENDING, RUNNING, SUCCEEDED
from hyperparam.sweep import ALGORITHMS
from hyperparam.trials import PHASES
from web.api import MirrorFilterSet

PARAM_PREFIX = "param."
ORDERINGS = ("index", "-index", "metric", "-metric", "best")


class SweepFilterSet(MirrorFilterSet):
    """`?namespace=team-a&phase=Running&algorithm=tpe&name=mnist`; deleted sweeps only with `deleted=true`."""

    phase = serializers.ChoiceField(choices=(PENDING, RUNNING, SUCCEEDED, FAILED), required=False)
    algorithm = serializers.ChoiceField(choices=ALGORITHMS, required=False)


class TrialFilterSet(serializers.Serializer):
    """`?phase=Succeeded&metric_min=0.1&metric_max=0.5&param.lr=0.01&ordering=best`.

    `ordering`: index (default), -index, metric, -metric, or best (the objective's direction); trials
    without a metric always come last. `param.<name>` matches the exact string a trial received.
    """

    phase = serializers.MultipleChoiceField(choices=PHASES, required=False)
    metric_min = serializers.FloatField(required=False)
    metric_max = serializers.FloatField(required=False)
    ordering = serializers.ChoiceField(choices=ORDERINGS, required=False, default="index")

    @classmethod
    def filter(cls, request: Request, sweep: Sweep, queryset: QuerySet[Any]) -> QuerySet[Any]:
        data = {key: request.query_params.getlist(key) if key == "phase" else value
                for key, value in request.query_params.items()}  # fmt: skip
        params = cls(data=data)
        params.is_valid(raise_exception=True)
        values = params.validated_data
        if values.get("phase"):
            queryset = queryset.filter(phase__in=sorted(values["phase"]))
        if "metric_min" in values:
            queryset = queryset.filter(metric__gte=values["metric_min"])
        if "metric_max" in values:
            queryset = queryset.filter(metric__lte=values["metric_max"])
        queryset = queryset.filter(_parameter_filter(request, sweep))
        return queryset.order_by(*trial_ordering(values["ordering"], sweep.goal))


def trial_ordering(ordering: str, goal: str) -> tuple[Any, ...]:
    """ORDER BY for an `ordering` value: each one reads through an index of the trial table."""
    if ordering == "best":
        ordering = "-metric" if goal == "maximize" else "metric"
    if ordering == "metric":
        return (F("metric").asc(nulls_last=True), "index")
    if ordering == "-metric":
        return (F("metric").desc(nulls_last=True), "index")
    return (ordering,)


def _parameter_filter(request: Request, sweep: Sweep) -> Q:
    names = set(sweep.parameter_names)
    condition = Q()
    for key, value in request.query_params.items():
        if not key.startswith(PARAM_PREFIX):
            continue
        name = key.removeprefix(PARAM_PREFIX)
        if name not in names:
            known = ", ".join(sorted(names))
            raise serializers.ValidationError(
                {key: [f"{name!r} is not a hyperparameter of this sweep ({known})."]}
            )
        condition &= Q(**{f"params__{name}": value})
    return condition
