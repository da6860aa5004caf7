"""/api/jobs/: list and read the mirror of training jobs; create and delete them in the cluster."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from access.permissions import NamespaceScopedMixin
from argoml_site.bodies import DOCUMENT_PARSERS
from jobs.actions import delete_job, submit_job
from jobs.models import Replica, TrainingJob
from kube.api import CLUSTER_UNAVAILABLE, ClusterUnavailable, NewestFirst, document_body, submit_refusal
from kube.errors import ApiError

from .filters import TrainingJobFilterSet
from .serializers import JobManifestSerializer, TrainingJobDetailSerializer, TrainingJobSerializer


@extend_schema_view(list=extend_schema(parameters=[TrainingJobFilterSet]))
class TrainingJobViewSet(
    NamespaceScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Training jobs as the cluster last reported them. POST submits a manifest to the cluster (202: the
    row appears once the controller sees the job); DELETE deletes the job from the cluster."""

    pagination_class = NewestFirst
    # A manifest is nested JSON: form encodings cannot carry it, so the schema offers none.
    parser_classes = DOCUMENT_PARSERS

    def get_queryset(self) -> QuerySet[TrainingJob]:
        queryset = self.scope_queryset(TrainingJob.objects.all())
        if self.action == "list":
            return TrainingJobFilterSet.filter(self.request, queryset)
        replicas = Replica.objects.order_by("replica_type", "replica_index", "created_at", "id")
        return queryset.prefetch_related(Prefetch("replicas", queryset=replicas), "history")

    def get_serializer_class(self) -> type[Any]:
        if self.action == "create":
            return JobManifestSerializer
        return TrainingJobSerializer if self.action == "list" else TrainingJobDetailSerializer

    @extend_schema(
        request=JobManifestSerializer,
        responses={202: JobManifestSerializer, 503: CLUSTER_UNAVAILABLE},
        extensions=document_body(
            "`spec` is the kind's spec, whose schema is the kind's CRD (deploy/crds/), and it is checked as "
            "the admission webhook checks it (replica types and their containers, policies, counts within "
            "the deployment's limits; docs/jobs.md): a body this schema accepts may be a 400 naming the "
            "field of `spec` at fault."
        ),
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = JobManifestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            created = submit_job(serializer.validated_data)
        except ApiError as error:
            raise submit_refusal(error) from error
        return Response(created, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={202: None, 503: CLUSTER_UNAVAILABLE})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        job = self.get_object()
        if job.deleted_at is None:
            try:
                delete_job(job.kind, job.namespace, job.name, job.uid, job.api_version)
            except ApiError as error:
                raise ClusterUnavailable(str(error)) from error
        return Response(status=status.HTTP_202_ACCEPTED)
