"""/api/jobs/: list and read the mirror of training jobs; create and delete them in the cluster."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from access.permissions import NamespaceScopedMixin
from jobs.actions import delete_job, submit_job
from jobs.models import Replica, TrainingJob
from web.api import ManifestViewSet
from web.bodies import DOCUMENT_PARSERS

from .filters import TrainingJobFilterSet
from .serializers import JobManifestSerializer, TrainingJobDetailSerializer, TrainingJobSerializer


class TrainingJobViewSet(NamespaceScopedMixin, ManifestViewSet):
    """Training jobs as the cluster last reported them. POST submits a manifest to the cluster (202: the
    row appears once the controller sees the job); DELETE deletes the job from the cluster."""

    queryset = TrainingJob.objects.all()
    serializer_class = TrainingJobSerializer
    detail_serializer_class = TrainingJobDetailSerializer
    manifest_serializer_class = JobManifestSerializer
    submitted_document = (
        "`spec` is the kind's spec, whose schema is the kind's CRD (deploy/crds/), and it is checked as the "
        "admission webhook checks it (replica types and their containers, policies, counts within the "
        "deployment's limits; docs/jobs.md): a body this schema accepts may be a 400 naming the field of "
        "`spec` at fault."
    )
    filterset = TrainingJobFilterSet
    parser_classes = DOCUMENT_PARSERS

    def detail_queryset(self, queryset: QuerySet[TrainingJob]) -> QuerySet[TrainingJob]:
        replicas = Replica.objects.order_by("replica_type", "replica_index", "created_at", "id")
        return queryset.prefetch_related(Prefetch("replicas", queryset=replicas), "history")

    def submit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return submit_job(manifest)

    def delete_in_cluster(self, job: TrainingJob) -> None:
        delete_job(job.kind, job.namespace, job.name, job.uid, job.api_version)
