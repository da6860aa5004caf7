"""Serializers of TrainJobs and runtimes. Everything read here was written by the mirror (or, for progress
reports, by the progress endpoint), so every field is read-only; a new TrainJob is a manifest
(TrainJobManifestSerializer), submitted to the cluster, not saved."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from kube import names
from trainer import constants as c
from trainer import models
from trainer.runtimes.actions import check_train_job
from web import api

TRAIN_JOB_FIELDS: tuple[str, ...] = (
    "id",
    "uid",
    "namespace",
    "name",
    "phase",
    "state_reason",
    "state_message",
    "runtime_kind",
    "runtime_name",
    "runtime_generation",
    "steps_summary",
    "progress_percentage",
    "estimated_remaining_seconds",
    "created_at",
    "start_time",
    "completion_time",
    "updated_at",
    "deleted_at",
)


class TrainJobPodSerializer(api.ObservedPodSerializer):
    """A pod of one of the job's steps (replicated jobs): node, launcher, dataset-initializer, …"""

    class Meta:
        model = models.TrainJobPod
        fields = ("step", "job_index", "completion_index", *api.POD_FIELDS)


class TrainJobHistorySerializer(api.HistorySerializer):
    class Meta(api.HistorySerializer.Meta):
        model = models.TrainJobHistory


class RuntimeRevisionSerializer(api.ReadOnlyModelSerializer):
    """The revision of the runtime the job started from (`argoml.io/runtime-generation`)."""

    runtime_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = models.RuntimeRevision
        fields = ("runtime_id", "generation", "changed_by", "recorded_at", "diff")


class ProgressMetricSerializer(serializers.Serializer):
    name = serializers.CharField(read_only=True)
    value = serializers.CharField(read_only=True)


class TrainerStatusUpdateSerializer(api.ReadOnlyModelSerializer):
    """One progress report a pod pushed (KEP-2779): progress, ETA and metrics as text, as reported."""

    metrics = ProgressMetricSerializer(many=True, read_only=True)

    class Meta:
        model = models.TrainerStatusUpdate
        fields = (
            "id",
            "pod",
            "progress_percentage",
            "estimated_remaining_seconds",
            "metrics",
            "reported_at",
            "received_at",
        )


class TrainJobSerializer(api.ReadOnlyModelSerializer):
    """A TrainJob in a list: identity, state, runtime, progress and the steps' summary (one row, no joins)."""

    class Meta:
        model = models.TrainJob
        fields = TRAIN_JOB_FIELDS


class TrainJobDetailSerializer(TrainJobSerializer):
    """A TrainJob with its spec and status as the cluster holds them, its steps' pods, its history, the
    latest metrics it reported and the runtime revision it ran (null while unknown)."""

    steps = TrainJobPodSerializer(source="pods", many=True, read_only=True)
    history = TrainJobHistorySerializer(many=True, read_only=True)
    metrics = serializers.SerializerMethodField()
    revision = serializers.SerializerMethodField()

    class Meta(TrainJobSerializer.Meta):
        fields = (*TRAIN_JOB_FIELDS, *api.DETAIL_FIELDS, "metrics", "revision", "steps", "history")

    @extend_schema_field(ProgressMetricSerializer(many=True))
    def get_metrics(self, job: models.TrainJob) -> list[dict[str, str]]:
        trainer_status = job.status.get("trainerStatus") if isinstance(job.status, dict) else None
        reported = trainer_status.get("metrics") if isinstance(trainer_status, dict) else None
        if not isinstance(reported, list):
            return []
        return [
            {"name": str(m.get("name", "")), "value": str(m.get("value", ""))}
            for m in reported
            if isinstance(m, dict)
        ]

    @extend_schema_field(RuntimeRevisionSerializer(allow_null=True))
    def get_revision(self, job: models.TrainJob) -> dict[str, Any] | None:
        if job.runtime_generation is None or not job.runtime_name:
            return None
        revision = models.RuntimeRevision.objects.revision_of(
            job.runtime_kind, job.namespace, job.runtime_name, job.runtime_generation, job.created_at
        )
        return None if revision is None else dict(RuntimeRevisionSerializer(revision).data)


class TrainingRuntimeSerializer(api.ReadOnlyModelSerializer):
    """A TrainingRuntime or ClusterTrainingRuntime (namespace ""), with how many TrainJobs name it and
    whether one does, as far as the namespaces you may read tell (`TrainingRuntime.objects.seen_from`)."""

    train_jobs = serializers.IntegerField(
        read_only=True, help_text="TrainJobs (not deleted) naming it, in the namespaces you may read."
    )
    in_use = serializers.BooleanField(
        source="in_use_seen",
        read_only=True,
        help_text="A TrainJob in a namespace you may read names it (superusers: any TrainJob does).",
    )

    class Meta:
        model = models.TrainingRuntime
        fields = (
            "id",
            "uid",
            "kind",
            "namespace",
            "name",
            "framework",
            "generation",
            "in_use",
            "train_jobs",
            "created_at",
            "deleting_since",
            "deleted_at",
        )


class TrainJobMetadataSerializer(api.ManifestMetadataSerializer):
    """A TrainJob's name is a DNS-1035 label (Trainer's CEL rule): its pods and Service are named after it."""

    name = api.name_field(names.NameFormat.DNS1035_LABEL)


class TrainJobManifestSerializer(api.ManifestSerializer):
    """A TrainJob manifest as `kubectl apply` would take it (apiVersion optional)."""

    metadata_serializer = TrainJobMetadataSerializer
    apiVersion = serializers.ChoiceField(choices=[c.API_VERSION], required=False)
    kind = serializers.ChoiceField(choices=[c.TRAIN_JOB_KIND])
    metadata = api.metadata_field(TrainJobMetadataSerializer)
    spec = serializers.DictField(help_text="Trainer's TrainJob spec: runtimeRef, trainer, initializer, …")

    def check(self, manifest: dict[str, Any]) -> list[Any]:
        return list(check_train_job(manifest))
