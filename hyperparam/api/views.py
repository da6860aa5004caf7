"""/api/hyperparams/: list and read the mirror of sweeps, create and delete them in the cluster; each sweep's
trials filtered and ordered by metric, and exported as CSV."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from access.permissions import NamespaceScopedMixin
from hyperparam.actions import delete_sweep, submit_sweep
from hyperparam.models import Sweep, Trial
from kube.models import JSON_COLUMNS
from web.api import ManifestViewSet
from web.bodies import DOCUMENT_PARSERS

from .export import csv_response
from .filters import SweepFilterSet, TrialFilterSet
from .pagination import UncountedPagination
from .serializers import SweepDetailSerializer, SweepManifestSerializer, SweepSerializer, TrialSerializer

# `param.<name>=` is not a schema parameter: the sweep's hyperparameters name them, so the text says it.
TRIALS_DESCRIPTION = (
    "The sweep's trials, filtered and ordered. Also `?param.<name>=<value>`: trials that received exactly "
    "this string for the hyperparameter <name> (400 when the sweep has no such hyperparameter)."
)


class SweepViewSet(NamespaceScopedMixin, ManifestViewSet):
    """Hyperparameter sweeps as the cluster last reported them. POST submits a HyperparamWorkflow to the
    cluster (202: the row appears once the controller sees it); DELETE deletes it from the cluster."""

    queryset = Sweep.objects.all()
    serializer_class = SweepSerializer
    detail_serializer_class = SweepDetailSerializer
    manifest_serializer_class = SweepManifestSerializer
    submitted_document = (
        "`spec` is a HyperparamWorkflow's spec (its CRD: deploy/crds/), checked as the admission webhook "
        "checks it: the search space, the objective, and the Argo Workflow it runs, linted as `argo lint` "
        "would (docs/hyperparam.md): a body this schema accepts may be a 400 naming the field at fault."
    )
    filterset = SweepFilterSet
    parser_classes = DOCUMENT_PARSERS
    list_deferred = (*JSON_COLUMNS, "workflows", "mirrored_batches")

    def detail_queryset(self, queryset: QuerySet[Sweep]) -> QuerySet[Sweep]:
        if self.action in ("trials", "trials_csv"):
            return queryset.only("id", "namespace", "name", "spec", "goal", "metric_name")
        return super().detail_queryset(queryset)

    def get_serializer_class(self) -> type[Any]:
        if self.action in ("trials", "trials_csv"):
            return TrialSerializer
        return super().get_serializer_class()

    def submit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return submit_sweep(manifest)

    def delete_in_cluster(self, sweep: Sweep) -> None:
        delete_sweep(sweep.namespace, sweep.name, sweep.uid)

    @extend_schema(
        parameters=[TrialFilterSet], description=TRIALS_DESCRIPTION, responses=TrialSerializer(many=True)
    )
    @action(detail=True, methods=["get"], pagination_class=UncountedPagination)
    def trials(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The sweep's trials: `?phase=`, `metric_min`/`metric_max`, `param.<name>=`, `ordering=best`."""
        trials = self._trials(request, self.get_object())
        page = self.paginate_queryset(trials)
        return self.get_paginated_response(TrialSerializer(page, many=True).data)

    @extend_schema(
        parameters=[TrialFilterSet], description=TRIALS_DESCRIPTION, responses={(200, "text/csv"): str}
    )
    @action(detail=True, methods=["get"], url_path="trials/csv")
    def trials_csv(self, request: Request, *args: Any, **kwargs: Any) -> StreamingHttpResponse:
        """The same trials (same filters and ordering) as CSV, one column per hyperparameter, streamed."""
        sweep = self.get_object()
        return csv_response(sweep, self._trials(request, sweep))

    def _trials(self, request: Request, sweep: Sweep) -> QuerySet[Trial]:
        return TrialFilterSet.filter(request, sweep, Trial.objects.filter(sweep=sweep))
