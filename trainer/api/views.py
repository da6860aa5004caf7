"""/api/trainjobs/: list and read the mirror of TrainJobs with their steps, runtime revision and progress
reports; submit and delete them in the cluster. /api/trainingruntimes/: the runtimes a TrainJob may name."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, Q, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from access.permissions import NamespaceScopedMixin
from access.scopes import request_scope
from trainer.models import TrainerStatusUpdate, TrainingRuntime, TrainJob, TrainJobPod
from trainer.runtimes import actions
from web.api import ManifestViewSet, NewestFirst
from web.bodies import DOCUMENT_PARSERS

from .filters import TrainingRuntimeFilterSet, TrainJobFilterSet
from .serializers import (
    TrainerStatusUpdateSerializer,
    TrainingRuntimeSerializer,
    TrainJobDetailSerializer,
    TrainJobManifestSerializer,
    TrainJobSerializer,
)


class OldestFirst(NewestFirst):
    """A job's progress reports in the order they arrived, in stable pages."""

    ordering = "id"


class TrainJobViewSet(NamespaceScopedMixin, ManifestViewSet):
    """TrainJobs as the cluster last reported them. POST submits a manifest to the cluster (202: the row
    appears once the controller sees the job); DELETE deletes the job from the cluster; …/updates/ lists
    every progress report its pods pushed (KEP-2779), oldest first."""

    queryset = TrainJob.objects.all()
    serializer_class = TrainJobSerializer
    detail_serializer_class = TrainJobDetailSerializer
    manifest_serializer_class = TrainJobManifestSerializer
    submitted_document = (
        "`spec` is a TrainJob's spec (its CRD: deploy/crds/trainer/), checked as Kubeflow Trainer's webhook "
        "checks it, against the runtime `spec.runtimeRef` names (docs/trainer.md): a body this schema "
        "accepts may be a 400 naming the field at fault."
    )
    filterset = TrainJobFilterSet
    parser_classes = DOCUMENT_PARSERS

    def detail_queryset(self, queryset: QuerySet[TrainJob]) -> QuerySet[TrainJob]:
        if self.action == "updates":
            return queryset.only("id", "uid", "namespace", "name")
        pods = TrainJobPod.objects.order_by("step", "job_index", "completion_index", "created_at", "id")
        return queryset.prefetch_related(Prefetch("pods", queryset=pods), "history")

    def get_serializer_class(self) -> type[Any]:
        if self.action == "updates":
            return TrainerStatusUpdateSerializer
        return super().get_serializer_class()

    def submit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return actions.submit_train_job(manifest)

    def delete_in_cluster(self, job: TrainJob) -> None:
        actions.delete_train_job(job.namespace, job.name, job.uid)

    @extend_schema(responses=TrainerStatusUpdateSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=OldestFirst)
    def updates(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The job's progress reports (progress %, ETA, metrics as text): the reports filed under this
        TrainJob (its namespace, name and uid), as the progress endpoint verified them."""
        job = self.get_object()
        page = self.paginate_queryset(TrainerStatusUpdate.objects.of(job))
        return self.get_paginated_response(TrainerStatusUpdateSerializer(page, many=True).data)


@extend_schema_view(list=extend_schema(parameters=[TrainingRuntimeFilterSet]))
class TrainingRuntimeViewSet(mixins.ListModelMixin, NamespaceScopedMixin, viewsets.GenericViewSet):
    """The runtimes a TrainJob may name: every ClusterTrainingRuntime, and the TrainingRuntimes of the
    namespaces you may read; `train_jobs` counts the TrainJobs naming each, and `in_use` says whether one
    does, in those namespaces (superusers: the cluster's)."""

    pagination_class = NewestFirst
    serializer_class = TrainingRuntimeSerializer

    def get_queryset(self) -> QuerySet[TrainingRuntime]:
        scope = request_scope(self.request)
        runtimes = TrainingRuntime.objects.all()
        if not scope.everywhere:
            runtimes = runtimes.filter(Q(namespace="") | Q(namespace__in=sorted(scope.readable)))
        counted = runtimes.seen_from(None if scope.everywhere else sorted(scope.readable))
        return TrainingRuntimeFilterSet.filter(self.request, counted.defer("spec", "status", "labels"))
